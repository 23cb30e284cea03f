import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'

/**
 * podBidResume under an enforced spend limit, over HTTP as a member account: the limit is
 * checked at the bid the pod resumes at, not the one it was stopped with, in both directions.
 */
const GPU = 'NVIDIA RTX A6000'
const FLEET = fleetYaml({ hosts: [gpuHost('bid-resume-a6000', GPU, 2, { cloud: 'COMMUNITY' })] })

describe('podBidResume and the spend limit', () => {
  let platform: TestPlatform
  let key: string
  let accountId: string

  beforeAll(async () => {
    platform = await startTestPlatform(
      {
        billing: { meterIntervalMs: 3_600_000, enforce: true },
      },
      { fleetYaml: FLEET },
    )
    key = await otherAccountKey(platform, 'bid-resume@example.com')
    accountId = (await callJson(platform, '/v2/account', { key })).body.id
    const added = await platform.call(`/v2/admin/accounts/${accountId}/credits`, {
      method: 'POST',
      json: { amount: 50, note: 'spot bids' },
    })
    expect(added.status).toBe(200)
  }, 60_000)

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
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (await response.json()) as { data: any; errors?: Array<{ message: string }> }
  }

  const setSpendLimit = async (spendLimit: number) => {
    const response = await platform.call(`/v2/admin/accounts/${accountId}`, {
      method: 'PATCH',
      json: { spendLimit },
    })
    expect(response.status).toBe(200)
  }
  const stop = async (id: string) =>
    expect((await graphql(`mutation { podStop(input: {podId: "${id}"}) { id } }`)).errors).toBe(
      undefined,
    )
  const resume = (id: string, bid: number) =>
    graphql(
      `mutation { podBidResume(input: {podId: "${id}", bidPerGpu: ${bid}, gpuCount: 1}) { id costPerHr } }`,
    )

  it('checks the spend limit at the new bid', async () => {
    const rented = await graphql(
      `mutation { podRentInterruptable(input: {name: "bidder", imageName: "ubuntu", gpuTypeId: "${GPU}", gpuCount: 1, bidPerGpu: 1, dockerArgs: "sleep 600"}) { id costPerHr } }`,
    )
    expect(rented.errors).toBeUndefined()
    const id = rented.data.podRentInterruptable.id as string
    await stop(id)
    await setSpendLimit(0.5)

    // The old bid (1 USD/h) is above the limit; the new one (0.3) is within it.
    const lower = await resume(id, 0.3)
    expect(lower.errors).toBeUndefined()
    expect(lower.data.podBidResume.costPerHr).toBe(0.3)
    await stop(id)

    // The old bid (0.3) is within the limit; the new one (0.9) is not.
    const higher = await resume(id, 0.9)
    expect(higher.errors?.[0]?.message).toMatch(
      /spend limit exceeded: to start pod .* would cost \$0\.90\/h/,
    )
    const pod = (await callJson(platform, `/v2/pods/${id}`, { key })).body
    expect(pod.status).toBe('EXITED')
    await callJson(platform, `/v2/pods/${id}`, { key, method: 'DELETE' })
  })
})
