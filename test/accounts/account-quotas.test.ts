import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  type TestPlatform,
} from '../support/platform.js'
import { createSdkWorkerEndpoint, endpointWorkersWhen } from '../support/sdk-worker-endpoints.js'

/**
 * Quotas per account over HTTP, as a member account (docs/billing.md, "Quotas"): creates
 * beyond a quota are refused with 403 QUOTA_EXCEEDED naming the quota, its limit and the use;
 * the admin raising it lets them through; concurrent creates at the last slot let exactly one
 * pass; workers beyond the quota stay THROTTLED with the reason.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const A100 = 'NVIDIA A100-SXM4-80GB'

describe('quotas per account', () => {
  let platform: TestPlatform
  let key: string
  let accountId: string

  const setQuotas = async (quotas: Record<string, number | null>) => {
    const { status, body } = await callJson(platform, `/v2/admin/accounts/${accountId}/quotas`, {
      method: 'PATCH',
      json: quotas,
    })
    expect(status, JSON.stringify(body)).toBe(200)
    return body
  }
  const createPod = (name: string, gpuCount = 1) =>
    callJson(platform, '/v2/pods', {
      method: 'POST',
      key,
      json: { name, image: 'busybox', args: 'sleep 600', gpu: { id: A100, count: gpuCount } },
    })
  const untilRunning = async (id: string) => {
    const deadline = Date.now() + 20_000
    for (;;) {
      const { body } = await callJson(platform, `/v2/pods/${id}`, { key })
      if (body.status === 'RUNNING') return
      if (Date.now() > deadline) throw new Error(`pod ${id} still ${JSON.stringify(body)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const ownQuotas = async () =>
    (await callJson(platform, '/v2/account', { key })).body.quotas as Json

  beforeAll(async () => {
    platform = await startTestPlatform({
      sandbox: 'none',
      workers: {
        intervalMs: 200,
        pingIntervalMs: 1000,
        heartbeatTimeoutMs: 5000,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
      },
    })
    key = await otherAccountKey(platform, 'quotas@example.com')
    accountId = (await callJson(platform, '/v2/account', { key })).body.id
  })
  afterAll(async () => {
    await platform?.close()
  })

  it('has no quota by default, and only the admin may set one', async () => {
    expect(await ownQuotas()).toEqual({
      gpus: { limit: null, used: 0 },
      pods: { limit: null, used: 0 },
      workers: { limit: null, used: 0 },
      volumeGb: { limit: null, used: 0 },
    })
    const refused = await callJson(platform, `/v2/admin/accounts/${accountId}/quotas`, {
      method: 'PATCH',
      key,
      json: { gpus: 100 },
    })
    expect(refused.status).toBe(403)
    expect(refused.body.detail).toBe('only the admin account may read or set quotas')
    const bad = await callJson(platform, `/v2/admin/accounts/${accountId}/quotas`, {
      method: 'PATCH',
      json: { gpus: -1 },
    })
    expect(bad.status).toBe(422)
  })

  it('refuses pods and GPUs beyond the quota over REST and GraphQL, accepts once raised', async () => {
    await setQuotas({ pods: 1, gpus: 2 })
    const first = await createPod('first')
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    expect(await ownQuotas()).toMatchObject({
      pods: { limit: 1, used: 1 },
      gpus: { limit: 2, used: 1 },
    })

    const second = await createPod('second')
    expect(second.status).toBe(403)
    expect(second.body).toMatchObject({
      title: 'Forbidden',
      status: 403,
      errors: ['pods: limit 1, used 1, requested 1'],
    })
    expect(second.body.detail).toBe(
      'quota pods exceeded: create pod "second" needs 1 more pods, the account uses 1 of its quota of 1; free some or ask the admin to raise the quota',
    )

    const graphql = await callJson(platform, '/graphql', {
      method: 'POST',
      key,
      json: {
        query: `mutation { podFindAndDeployOnDemand(input: { name: "gql", imageName: "busybox", gpuTypeId: "${A100}", gpuCount: 1, cloudType: ALL, containerDiskInGb: 5, dockerArgs: "sleep 600" }) { id } }`,
      },
    })
    expect(graphql.body.errors?.[0]?.extensions?.code).toBe('QUOTA_EXCEEDED')
    const myself = await callJson(platform, '/graphql', {
      method: 'POST',
      key,
      json: { query: '{ myself { quotas { pods { limit used } gpus { limit used } } } }' },
    })
    expect(myself.body.data.myself.quotas).toEqual({
      pods: { limit: 1, used: 1 },
      gpus: { limit: 2, used: 1 },
    })
    expect(graphql.body.errors[0].message).toMatch(
      /quota pods exceeded: .* uses 1 of its quota of 1/,
    )

    await setQuotas({ pods: 3 })
    const tooManyGpus = await createPod('two-gpus', 2)
    expect(tooManyGpus.status).toBe(403)
    expect(tooManyGpus.body.detail).toMatch(
      /^quota gpus exceeded: create pod "two-gpus" needs 2 more GPUs, the account uses 1 of its quota of 2;/,
    )
    const second2 = await createPod('second')
    expect(second2.status, JSON.stringify(second2.body)).toBe(201)

    // A stopped pod still counts as a pod, not its GPUs; starting it takes them again.
    await untilRunning(first.body.id)
    const stop = await callJson(platform, `/v2/pods/${first.body.id}/action`, {
      method: 'POST',
      key,
      json: { action: 'stop' },
    })
    expect(stop.status, JSON.stringify(stop.body)).toBe(200)
    expect(await ownQuotas()).toMatchObject({ pods: { used: 2 }, gpus: { used: 1 } })
    await setQuotas({ gpus: 1 })
    const start = await callJson(platform, `/v2/pods/${first.body.id}/action`, {
      method: 'POST',
      key,
      json: { action: 'start' },
    })
    expect(start.status).toBe(403)
    expect(start.body.detail).toMatch(/^quota gpus exceeded: start pod .* uses 1 of its quota of 1/)
    await setQuotas({ gpus: null })
    const started = await callJson(platform, `/v2/pods/${first.body.id}/action`, {
      method: 'POST',
      key,
      json: { action: 'start' },
    })
    expect(started.status, JSON.stringify(started.body)).toBe(200)

    for (const id of [first.body.id, second2.body.id]) {
      await callJson(platform, `/v2/pods/${id}`, { method: 'DELETE', key })
    }
    expect(await ownQuotas()).toMatchObject({ pods: { used: 0 }, gpus: { used: 0 } })
  }, 30_000)

  it('lets exactly one of concurrent creates take the last slot', async () => {
    await setQuotas({ pods: 1, gpus: null })
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => createPod(`race-${i}`)))
    const statuses = answers.map((a) => a.status).sort()
    expect(statuses).toEqual([201, 403, 403, 403, 403, 403])
    expect(await ownQuotas()).toMatchObject({ pods: { limit: 1, used: 1 } })
    const winner = answers.find((a) => a.status === 201)!
    await callJson(platform, `/v2/pods/${winner.body.id}`, { method: 'DELETE', key })
    await setQuotas({ pods: null })
  }, 30_000)

  it('refuses network-volume GB beyond the quota on create and resize, also concurrently', async () => {
    await setQuotas({ volumeGb: 50 })
    const createVolume = (name: string, size: number) =>
      callJson(platform, '/v2/network-volumes', {
        method: 'POST',
        key,
        json: { name, size, dataCenterId: 'EU-RO-1' },
      })
    const first = await createVolume('first', 40)
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    const over = await createVolume('over', 20)
    expect(over.status).toBe(403)
    expect(over.body.detail).toMatch(
      /^quota volumeGb exceeded: create network volume "over" of 20 GB needs 20 more network-volume GB, the account uses 40 of its quota of 50;/,
    )
    const grow = await callJson(platform, `/v2/network-volumes/${first.body.id}`, {
      method: 'PATCH',
      key,
      json: { size: 60 },
    })
    expect(grow.status).toBe(403)
    expect(grow.body.errors).toEqual(['volumeGb: limit 50, used 40, requested 20'])

    const race = await Promise.all(Array.from({ length: 4 }, (_, i) => createVolume(`r${i}`, 10)))
    expect(race.map((r) => r.status).sort()).toEqual([201, 403, 403, 403])
    expect(await ownQuotas()).toMatchObject({ volumeGb: { limit: 50, used: 50 } })

    await setQuotas({ volumeGb: 100 })
    const grown = await callJson(platform, `/v2/network-volumes/${first.body.id}`, {
      method: 'PATCH',
      key,
      json: { size: 60 },
    })
    expect(grown.status, JSON.stringify(grown.body)).toBe(200)
    expect(await ownQuotas()).toMatchObject({ volumeGb: { limit: 100, used: 70 } })
  }, 30_000)

  it('launches no worker beyond the workers quota and says why on the worker', async () => {
    await setQuotas({ workers: 1 })
    const created = await createSdkWorkerEndpoint(platform, key, 'quota-workers', {
      workers: { min: 2, max: 2, idleTimeout: 5 },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    let workers = await endpointWorkersWhen(platform, key, created.body.id, (ws) =>
      ws.some((w) => w.status === 'THROTTLED' && /^quota /.test(w.reason ?? '')),
    )
    const throttled = workers.filter((w) => w.status === 'THROTTLED')
    expect(throttled, JSON.stringify(workers)).toHaveLength(1)
    expect(throttled[0].reason).toMatch(
      /^quota workers exceeded: a worker of endpoint \w+ needs 1 more serverless workers, the account uses 1 of its quota of 1;/,
    )
    expect((await ownQuotas()).workers).toEqual({ limit: 1, used: 1 })

    await setQuotas({ workers: 2 })
    workers = await endpointWorkersWhen(
      platform,
      key,
      created.body.id,
      (ws) => !ws.some((w) => w.status === 'THROTTLED'),
    )
    expect(
      workers.filter((w) => w.status === 'THROTTLED'),
      JSON.stringify(workers),
    ).toEqual([])
    await callJson(platform, `/v2/serverless/${created.body.id}`, { method: 'DELETE', key })
  }, 60_000)
})
