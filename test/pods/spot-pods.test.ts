import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/shared/clock.js'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'
import { fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until } from '../support/until.js'

/**
 * Spot pods (docs/pods.md, "Spot pods") end to end over HTTP, as two member accounts: a spot pod
 * rented with GraphQL's podRentInterruptable holds the last free GPU of a one-host community
 * fleet until an on-demand pod of another account needs it; it is then stopped (EXITED,
 * "preempted") with its volume kept, and was billed at its bid. Among spot pods, the lowest bid
 * goes first.
 */
const GPU = 'NVIDIA RTX A6000'
const FLEET = fleetYaml({ hosts: [gpuHost('spot-a6000-2', GPU, 2, { cloud: 'COMMUNITY' })] })
const HOUR = 3_600_000

// The store decides who wins the last GPU (one transaction on SQLite, an advisory lock on
// PostgreSQL): both run when PODYARD_TEST_POSTGRES_URL is set.
const stores = ['sqlite', ...(process.env[POSTGRES_URL_ENV] ? ['postgres'] : [])]

describe.each(stores)('spot pods (%s)', (store) => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z')
  let platform: TestPlatform
  let spotKey: string
  let demandKey: string
  let database: { url: string; drop: () => Promise<void> } | undefined

  beforeAll(async () => {
    if (store === 'postgres') database = await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
    platform = await startTestPlatform(
      {
        billing: { meterIntervalMs: 24 * HOUR, enforce: false },
        ...(database ? { storeUrl: database.url } : {}),
      },
      { clock, fleetYaml: FLEET },
    )
    spotKey = await otherAccountKey(platform, 'spot-renter@example.com')
    demandKey = await otherAccountKey(platform, 'on-demand@example.com')
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
    await database?.drop()
  })

  async function graphql(key: string, query: string) {
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query }),
    })
    expect(response.status).toBe(200)
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (await response.json()) as { data: any; errors?: Array<{ message: string }> }
  }

  const rent = (key: string, name: string, bid: number, extra = '') =>
    graphql(
      key,
      `mutation { podRentInterruptable(input: {name: "${name}", imageName: "ubuntu", gpuTypeId: "${GPU}", gpuCount: 1, bidPerGpu: ${bid}, dockerArgs: "sleep 600"${extra}}) { id podType costPerHr } }`,
    )

  async function onDemand(key: string, name: string) {
    return callJson(platform, '/v2/pods', {
      key,
      method: 'POST',
      json: {
        name,
        image: 'ubuntu',
        gpu: { id: GPU, count: 1 },
        cloud: 'COMMUNITY',
        args: 'sleep 600',
      },
    })
  }

  const podOf = async (key: string, id: string) =>
    (await callJson(platform, `/v2/pods/${id}`, { key })).body

  const running = (key: string, id: string) =>
    until(
      `pod ${id} RUNNING`,
      async () => {
        // A pod counts as started once it has run a while by the platform's clock.
        clock.advance(1000)
        return podOf(key, id)
      },
      (pod) => pod.status === 'RUNNING',
      20_000,
    )

  async function terminateAll(key: string) {
    const listed = await callJson(platform, '/v2/pods', { key })
    for (const pod of listed.body.pods) {
      await callJson(platform, `/v2/pods/${pod.id}`, { key, method: 'DELETE' })
    }
  }

  it('offers a minimum bid of half the community price, and refuses a lower bid', async () => {
    const catalog = await graphql(
      spotKey,
      `query { gpuTypes(input: {id: "${GPU}"}) { communityPrice communitySpotPrice lowestPrice(input: {gpuCount: 1, secureCloud: false}) { minimumBidPrice } } }`,
    )
    expect(catalog.errors).toBeUndefined()
    const [type] = catalog.data.gpuTypes
    expect(type.lowestPrice.minimumBidPrice).toBeCloseTo(type.communityPrice / 2, 4)
    expect(type.communitySpotPrice).toBe(type.lowestPrice.minimumBidPrice)

    const low = await rent(spotKey, 'too-low', type.lowestPrice.minimumBidPrice - 0.01)
    expect(low.errors?.[0]?.message).toMatch(
      /bidPerGpu .* is below the minimum bid for NVIDIA RTX A6000, .* USD per GPU-hour/,
    )
    const secure = await rent(spotKey, 'secure', 0.3, ', cloudType: SECURE')
    expect(secure.errors?.[0]?.message).toMatch(/COMMUNITY cloud only/)
    expect((await callJson(platform, '/v2/pods', { key: spotKey })).body.pods).toEqual([])
  })

  it('preempts the spot pod on the last free GPU for an on-demand pod, keeping its volume and billing it at its bid', async () => {
    const first = await onDemand(demandKey, 'demand-1')
    expect(first.status).toBe(201)
    const rented = await rent(
      spotKey,
      'spot',
      0.2,
      ', volumeInGb: 10, volumeMountPath: "/workspace"',
    )
    expect(rented.errors).toBeUndefined()
    const spot = rented.data.podRentInterruptable
    expect(spot).toMatchObject({ podType: 'INTERRUPTABLE', costPerHr: 0.2 })
    await running(spotKey, spot.id)
    expect((await podOf(spotKey, spot.id)).cost).toBe(0.2)

    // An hour (and the start) at the bid, metered before the GPU is taken.
    clock.advance(HOUR)
    await platform.meter.tick()

    const preemptedAt = clock.now().getTime()
    const second = await onDemand(demandKey, 'demand-2')
    expect(second.status, JSON.stringify(second.body)).toBe(201)
    await running(demandKey, second.body.id)

    const preempted = await podOf(spotKey, spot.id)
    expect(preempted).toMatchObject({
      status: 'EXITED',
      statusReason: 'preempted',
      cost: 0,
      mounts: { persistent: { size: 10, path: '/workspace' } },
    })
    // Its workload is stopped: the GPU is the on-demand pod's alone.
    await until(
      'the preempted workload gone',
      async () => (await platform.workloads()).pods,
      (pods) => !pods.includes(spot.id),
    )
    const events = await (
      await platform.call(`/v2/pods/${spot.id}/logs?source=system&follow=false`, { key: spotKey })
    ).text()
    expect(events).toMatch(/preempted \(on-demand pod .* needed its GPUs\)/)

    // Nothing is billed for its GPU while it is stopped; the hour before was billed at the bid.
    clock.advance(HOUR)
    await platform.meter.tick()
    const report = (
      await callJson(platform, `/v2/billing/pods?podId=${spot.id}&bucketSize=year`, {
        key: spotKey,
      })
    ).body
    const gpuAmount = report.records.reduce(
      (sum: number, r: { gpuAmount: number }) => sum + r.gpuAmount,
      0,
    )
    const heldHours = (preemptedAt - Date.parse(preempted.createdAt)) / HOUR
    expect(heldHours).toBeGreaterThan(1)
    expect(gpuAmount).toBeCloseTo(0.2 * heldHours, 4)

    // Another spot pod cannot take a GPU back from an on-demand pod.
    const blocked = await rent(spotKey, 'spot-2', 1)
    expect(blocked.errors?.[0]?.message).toMatch(/no capacity/i)

    // Once a GPU is free again, the preempted pod resumes with its volume, at a new bid.
    await callJson(platform, `/v2/pods/${first.body.id}`, { key: demandKey, method: 'DELETE' })
    const resumed = await graphql(
      spotKey,
      `mutation { podBidResume(input: {podId: "${spot.id}", bidPerGpu: 0.25, gpuCount: 1}) { id costPerHr } }`,
    )
    expect(resumed.errors).toBeUndefined()
    expect(resumed.data.podBidResume.costPerHr).toBe(0.25)
    expect(await running(spotKey, spot.id)).toMatchObject({
      mounts: { persistent: { size: 10, path: '/workspace' } },
      cost: 0.25,
    })
    await terminateAll(spotKey)
    await terminateAll(demandKey)
  })

  it('preempts the lowest bid of two spot pods', async () => {
    const higher = (await rent(spotKey, 'higher', 0.3)).data.podRentInterruptable
    const lower = (await rent(spotKey, 'lower', 0.2)).data.podRentInterruptable
    await running(spotKey, higher.id)
    await running(spotKey, lower.id)

    const demand = await onDemand(demandKey, 'demand-3')
    expect(demand.status, JSON.stringify(demand.body)).toBe(201)
    await running(demandKey, demand.body.id)
    expect(await podOf(spotKey, lower.id)).toMatchObject({
      status: 'EXITED',
      statusReason: 'preempted',
    })
    expect((await podOf(spotKey, higher.id)).status).toBe('RUNNING')

    // The on-demand account never sees the spot pods it displaced.
    expect((await callJson(platform, `/v2/pods/${lower.id}`, { key: demandKey })).status).toBe(404)
    await terminateAll(spotKey)
    await terminateAll(demandKey)
  })
})
