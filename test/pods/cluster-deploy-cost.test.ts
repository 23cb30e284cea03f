import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EU_SE_1, fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'

/**
 * GraphQL createCluster's `deployCost` is a price cap for the whole cluster, in whole cents:
 * dstack sends the cluster's price with two decimals (`(price * nodes).toFixed(2)`), which a
 * four-decimal comparison could refuse by a fraction of a cent.
 */
const GPU = 'NVIDIA RTX A6000'
const FLEET = fleetYaml({
  dataCenters: [{ ...EU_SE_1, globalNetwork: true }],
  hosts: [gpuHost('deploy-cost-secure', GPU, 4, { cloud: 'SECURE', vcpus: 16, memoryGb: 64 })],
})

describe('createCluster deployCost', () => {
  let platform: TestPlatform
  let key: string
  let pricePerGpu: number

  beforeAll(async () => {
    platform = await startTestPlatform(
      { billing: { meterIntervalMs: 3_600_000, enforce: false } },
      { fleetYaml: FLEET },
    )
    key = await otherAccountKey(platform, 'cluster-deploy-cost@example.com')
    const gpu = await callJson(platform, `/v2/catalog/gpus/${encodeURIComponent(GPU)}`, { key })
    expect(gpu.status).toBe(200)
    pricePerGpu = gpu.body.price.secure as number
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
  })

  async function createCluster(name: string, deployCost: string) {
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({
        query: `mutation { createCluster(input: {clusterName: "${name}", gpuTypeId: "${GPU}", podCount: 2, gpuCountPerPod: 2, imageName: "busybox", dockerArgs: "sleep 600", type: TRAINING, deployCost: ${deployCost}}) { id pods { id } } }`,
      }),
    })
    return (await response.json()) as {
      data?: { createCluster: { id: string; pods: Array<{ id: string }> } | null } | null
      errors?: Array<{ message: string; extensions?: { code?: string } }>
    }
  }

  async function deleteCluster(id: string) {
    await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: `mutation { deleteCluster(input: {id: "${id}"}) }` }),
    })
  }

  it("accepts the cluster's price as dstack formats it, two decimals", async () => {
    const answer = await createCluster('capped-at-price', (pricePerGpu * 4).toFixed(2))
    expect(answer.errors).toBeUndefined()
    expect(answer.data?.createCluster?.pods).toHaveLength(2)
    await deleteCluster(answer.data!.createCluster!.id)
  })

  it('refuses a cluster dearer than its deployCost, naming both prices, and places nothing', async () => {
    const cents = Math.round(pricePerGpu * 4 * 100)
    const cap = ((cents - 1) / 100).toFixed(2)
    const answer = await createCluster('capped-below-price', cap)
    expect(answer.errors?.[0]?.message).toBe(
      `the cluster would cost ${(cents / 100).toFixed(2)} USD per hour (2 pods of ${pricePerGpu * 2}), more than the deployCost of ${Number(cap)} it was given`,
    )
    expect((await callJson(platform, '/v2/pods?includeClusterPods=true', { key })).body).toEqual({
      pods: [],
    })
  })

  it('refuses a deployCost that is not above 0', async () => {
    const answer = await createCluster('capped-at-zero', '0')
    expect(answer.errors?.[0]?.message).toContain(
      'input.deployCost: must be > 0 (USD per hour, for the whole cluster)',
    )
  })
})
