import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * GraphQL is desired-state: podStop sent to a pod that has not started yet (runpod-python's
 * stop_pod right after create_pod, when placement takes longer than the client) is accepted and
 * the pod never runs. REST keeps the specification's actions, where PROVISIONING has no stop.
 * The lifecycle loop is paused while the pod is created, so that it is surely PROVISIONING.
 */
describe('GraphQL podStop before the pod has started', () => {
  let platform: TestPlatform
  let key: string

  beforeAll(async () => {
    platform = await startTestPlatform()
    key = await otherAccountKey(platform, 'stop-desired@example.com')
  })
  afterAll(async () => {
    await platform?.close()
  })

  async function graphql(query: string) {
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query }),
    })
    expect(response.status).toBe(200)
    return (await response.json()) as {
      data: Record<string, { id: string; desiredStatus: string; lastStatusChange: string }>
      errors?: unknown[]
    }
  }

  it('stops a PROVISIONING pod over GraphQL, which REST refuses, and it never starts', async () => {
    await platform.lifecycle.stop()
    let podId: string
    try {
      const created = await graphql(
        'mutation { podFindAndDeployOnDemand(input: {name: "early-stop", imageName: "ubuntu", gpuTypeId: "NVIDIA GeForce RTX 4090", cloudType: SECURE, gpuCount: 1, dockerArgs: "sleep 600"}) { id desiredStatus } }',
      )
      expect(created.errors).toBeUndefined()
      podId = created.data.podFindAndDeployOnDemand!.id
      const rest = await callJson(platform, `/v2/pods/${podId}`, { key })
      expect(rest.body.status).toBe('PROVISIONING')

      // REST: the specification's actions for PROVISIONING are start and terminate.
      const refused = await callJson(platform, `/v2/pods/${podId}/action`, {
        key,
        method: 'POST',
        json: { action: 'stop' },
      })
      expect(refused.status).toBe(409)
      expect(refused.body.detail).toMatch(/cannot stop pod .* while it is PROVISIONING/)

      const stopped = await graphql(
        `mutation { podStop(input: {podId: "${podId}"}) { id desiredStatus lastStatusChange } }`,
      )
      expect(stopped.errors).toBeUndefined()
      expect(stopped.data.podStop).toMatchObject({ id: podId, desiredStatus: 'EXITED' })
      expect(stopped.data.podStop!.lastStatusChange).toMatch(/^EXITED \(stopped by request\)/)
    } finally {
      platform.lifecycle.start()
    }

    // The loop runs again and looks at every pod: this one stays stopped, holds nothing and
    // no workload of it runs.
    await until(
      'a full pass of the lifecycle',
      async () => (await platform.workloads()).pods,
      () => true,
    )
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const after = await callJson(platform, `/v2/pods/${podId}`, { key })
    expect(after.body).toMatchObject({ status: 'EXITED', cost: 0 })
    expect((await platform.workloads()).pods).not.toContain(podId)

    // It can be started later, as any stopped pod.
    const resumed = await graphql(
      `mutation { podResume(input: {podId: "${podId}"}) { id desiredStatus } }`,
    )
    expect(resumed.errors).toBeUndefined()
    await until(
      'the resumed pod running',
      async () => (await callJson(platform, `/v2/pods/${podId}`, { key })).body.status,
      (status) => status === 'RUNNING',
    )
    await callJson(platform, `/v2/pods/${podId}`, { key, method: 'DELETE' })
  })

  it('still refuses podStop of a pod that is already stopped', async () => {
    const created = await graphql(
      'mutation { podFindAndDeployOnDemand(input: {name: "twice", imageName: "ubuntu", gpuTypeId: "NVIDIA GeForce RTX 4090", cloudType: SECURE, gpuCount: 1, dockerArgs: "sleep 600"}) { id } }',
    )
    const podId = created.data.podFindAndDeployOnDemand!.id
    expect(
      (await graphql(`mutation { podStop(input: {podId: "${podId}"}) { id } }`)).errors,
    ).toBeUndefined()
    const again = await graphql(`mutation { podStop(input: {podId: "${podId}"}) { id } }`)
    expect(again.errors).toHaveLength(1)
    await callJson(platform, `/v2/pods/${podId}`, { key, method: 'DELETE' })
  })
})
