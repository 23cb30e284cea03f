import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EU_SE_1, fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'

/**
 * Instant clusters and spot pods, over HTTP as two member accounts. A cluster's pods are
 * SECURE-cloud pods and spot pods run in the COMMUNITY cloud only, so a cluster takes free
 * SECURE GPUs and never preempts a spot pod, as an on-demand SECURE pod never does; with no
 * SECURE room it is NO_CAPACITY and the spot pods keep running.
 */
const GPU = 'NVIDIA RTX A6000'
const FLEET = fleetYaml({
  dataCenters: [{ ...EU_SE_1, globalNetwork: true }],
  hosts: [
    gpuHost('spot-cluster-community', GPU, 2, { cloud: 'COMMUNITY' }),
    gpuHost('spot-cluster-secure', GPU, 2, { cloud: 'SECURE' }),
  ],
})

describe('instant clusters beside spot pods', () => {
  let platform: TestPlatform
  let spotKey: string
  let clusterKey: string

  beforeAll(async () => {
    platform = await startTestPlatform(
      {
        billing: { meterIntervalMs: 3_600_000, enforce: false },
      },
      { fleetYaml: FLEET },
    )
    spotKey = await otherAccountKey(platform, 'spot-beside-clusters@example.com')
    clusterKey = await otherAccountKey(platform, 'cluster-beside-spot@example.com')
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
  })

  async function rent(name: string) {
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${spotKey}` },
      body: JSON.stringify({
        query: `mutation { podRentInterruptable(input: {name: "${name}", imageName: "ubuntu", gpuTypeId: "${GPU}", gpuCount: 1, bidPerGpu: 0.2, dockerArgs: "sleep 600"}) { id } }`,
      }),
    })
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const body = (await response.json()) as { data: any; errors?: unknown }
    expect(body.errors).toBeUndefined()
    return body.data.podRentInterruptable.id as string
  }
  const createCluster = (name: string) =>
    callJson(platform, '/v2/clusters', {
      key: clusterKey,
      method: 'POST',
      json: {
        name,
        type: 'TRAINING',
        image: 'busybox',
        args: 'sleep 600',
        compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
      },
    })

  it('places a cluster on free SECURE GPUs and never preempts spot pods for one', async () => {
    const spots = [await rent('spot-a'), await rent('spot-b')]

    const first = await createCluster('beside-spot')
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    const nodes = (
      await callJson(platform, `/v2/pods?includeClusterPods=true`, { key: clusterKey })
    ).body.pods as Array<{ cloud: string }>
    expect(nodes.map((node) => node.cloud)).toEqual(['SECURE', 'SECURE'])

    // The SECURE host is full now; the spot pods' COMMUNITY GPUs are not the cluster's to take.
    const second = await createCluster('no-room')
    expect(second.status, JSON.stringify(second.body)).toBe(409)
    expect(second.body.detail).toMatch(/no data center can hold all 2 pods together/)
    for (const id of spots) {
      const pod = (await callJson(platform, `/v2/pods/${id}`, { key: spotKey })).body
      expect(pod.status).not.toBe('EXITED')
      expect(pod.statusReason ?? '').not.toBe('preempted')
    }
    await callJson(platform, `/v2/clusters/${first.body.id}`, { key: clusterKey, method: 'DELETE' })
  })
})
