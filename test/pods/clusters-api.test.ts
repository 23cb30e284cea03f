import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/shared/clock.js'
import { runCli } from '../support/cli.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const H100 = 'NVIDIA H100 80GB HBM3'
const A100 = 'NVIDIA A100-SXM4-80GB'
const ARGS =
  'echo "rank=$NODE_RANK nodes=$NUM_NODES trainers=$NUM_TRAINERS world=$WORLD_SIZE addr=$NODE_ADDR primary=$PRIMARY_ADDR:$PRIMARY_PORT master=$MASTER_ADDR"; sleep 300'

/**
 * Instant clusters (`/v2/clusters`) over real HTTP with real pod processes: N GPU pods
 * placed together in one data center, or none; each told its rank, the node count and the
 * primary's address; deleted with their cluster.
 */
describe('instant clusters', () => {
  let platform: TestPlatform
  let otherKey: string

  const call = (method: string, path: string, body?: unknown, key?: string) =>
    platform.call(path, {
      method,
      ...(body === undefined ? {} : { json: body }),
      ...(key ? { key } : {}),
    })
  const problem = async (response: Response, status: number) => {
    const body = (await response.json()) as { detail: string; errors?: string[] }
    expect(response.status, JSON.stringify(body)).toBe(status)
    return body
  }
  const create = (body: Json) =>
    call('POST', '/v2/clusters', { name: 'train', type: 'TRAINING', image: 'busybox', ...body })
  const logs = async (podId: string) =>
    (await platform.call(`/v2/pods/${podId}/logs?follow=false&source=container`)).text()
  const allPods = async () =>
    (await json<{ pods: Json[] }>(await call('GET', '/v2/pods?includeClusterPods=true'))).pods
  const availability = async (gpu: string) =>
    (await json<Json>(await call('GET', `/v2/catalog/gpus/${encodeURIComponent(gpu)}`)))
      .availability

  beforeAll(async () => {
    platform = await startTestPlatform()
    otherKey = await otherAccountKey(platform, 'clusters-other@example.com')
  })
  afterAll(() => platform.close())

  it('places the pods together and tells each its rank, the node count and the primary', async () => {
    const cluster = await json<Json>(
      await create({ compute: { gpuTypeId: H100, gpuCountPerPod: 4, podCount: 2 }, args: ARGS }),
      201,
    )
    expect(cluster).toMatchObject({
      id: expect.stringMatching(/^[a-z0-9]{14}$/),
      name: 'train',
      type: 'TRAINING',
      compute: { gpuTypeId: H100, gpuCountPerPod: 4, podCount: 2 },
      dataCenterId: 'US-KS-2',
      pods: { total: 2, byStatus: { PROVISIONING: 2 } },
      network: { cidr: '10.0.0.0/8' },
      primary: { podId: expect.any(String), status: 'PROVISIONING' },
    })
    const { pods } = await json<{ pods: Json[] }>(
      await call('GET', `/v2/clusters/${cluster.id}/pods`),
    )
    expect(pods.map((p) => p.cluster.rank)).toEqual([0, 1])
    expect(pods[0].id).toBe(cluster.primary.podId)
    for (const pod of pods) {
      expect(pod.cluster).toEqual({
        id: cluster.id,
        rank: pod.cluster.rank,
        ip: expect.any(String),
      })
      expect(pod.globalNetworking).toEqual({
        enabled: true,
        ip: pod.cluster.ip,
        internalDns: `${pod.id}.runpod.internal`,
      })
      expect(pod).toMatchObject({ dataCenterId: 'US-KS-2', gpu: { id: H100, count: 4 } })
    }
    const [primary, worker] = pods
    for (const pod of pods) {
      await expect
        .poll(() => logs(pod.id), { timeout: 20_000, interval: 200 })
        .toContain(
          `rank=${pod.cluster.rank} nodes=2 trainers=4 world=8 addr=${pod.cluster.ip} primary=${primary.cluster.ip}:29500 master=${primary.cluster.ip}`,
        )
    }
    expect(worker.cluster.ip).not.toBe(primary.cluster.ip)
    // All eight H100s of the fleet are the cluster's now.
    expect(await availability(H100)).toBe('NONE')

    // Cluster pods are listed only when asked for, and go only with their cluster.
    expect((await json<Json>(await call('GET', '/v2/pods'))).pods).toEqual([])
    expect((await allPods()).map((p: Json) => p.id).sort()).toEqual(pods.map((p) => p.id).sort())
    const refused = await problem(await call('DELETE', `/v2/pods/${worker.id}`), 409)
    expect(refused.detail).toContain(`DELETE /v2/clusters/${cluster.id}`)
    await problem(await call('POST', `/v2/pods/${worker.id}/action`, { action: 'terminate' }), 409)

    const renamed = await json<Json>(
      await call('PATCH', `/v2/clusters/${cluster.id}`, { name: 'renamed' }),
    )
    expect(renamed.name).toBe('renamed')
    await problem(await call('PATCH', `/v2/clusters/${cluster.id}`, { type: 'RAY' }), 422)
    expect(
      (await json<{ clusters: Json[] }>(await call('GET', '/v2/clusters'))).clusters.map(
        (c) => c.id,
      ),
    ).toEqual([cluster.id])
    for (const path of [`/v2/clusters/${cluster.id}`, `/v2/clusters/${cluster.id}/pods`]) {
      await problem(await call('GET', path, undefined, otherKey), 404)
    }
    await problem(await call('DELETE', `/v2/clusters/${cluster.id}`, undefined, otherKey), 404)

    expect((await call('DELETE', `/v2/clusters/${cluster.id}`)).status).toBe(204)
    await problem(await call('GET', `/v2/clusters/${cluster.id}`), 404)
    for (const pod of pods) {
      expect((await json<Json>(await call('GET', `/v2/pods/${pod.id}`))).status).toBe('TERMINATED')
    }
    expect(await availability(H100)).not.toBe('NONE')
  }, 60_000)

  it('places all the pods in one data center or none of them, saying why', async () => {
    const before = await allPods()
    const refused = await problem(
      await create({ compute: { gpuTypeId: A100, gpuCountPerPod: 4, podCount: 3 } }),
      409,
    )
    expect(refused.detail).toMatch(/^no data center can hold all 3 pods together: /)
    expect(refused.detail).toContain('EU-RO-1: ')
    expect(await allPods()).toEqual(before)
    expect(await availability(A100)).toBe('HIGH')
    // The request's data centers are the only ones tried.
    const elsewhere = await problem(
      await create({
        compute: { gpuTypeId: A100, gpuCountPerPod: 1, podCount: 2 },
        dataCenterIds: ['US-KS-2'],
      }),
      409,
    )
    expect(elsewhere.detail).toContain('US-KS-2: ')
  })

  it('gives SLURM and RAY nodes their roles', async () => {
    const cluster = await json<Json>(
      await create({
        type: 'SLURM',
        compute: { gpuTypeId: A100, gpuCountPerPod: 1, podCount: 3 },
      }),
      201,
    )
    const { pods } = await json<{ pods: Json[] }>(
      await call('GET', `/v2/clusters/${cluster.id}/pods`),
    )
    expect(pods.map((p) => p.cluster.role)).toEqual([
      'SLURM_CONTROLLER',
      'SLURM_COMPUTE',
      'SLURM_COMPUTE',
    ])
    expect((await call('DELETE', `/v2/clusters/${cluster.id}`)).status).toBe(204)
  })

  it('refuses bad requests: schema (422) and rules (400)', async () => {
    const schema = await problem(
      await create({ compute: { gpuTypeId: A100, gpuCountPerPod: 1, podCount: 1 } }),
      422,
    )
    expect(schema.errors).toContain('body.compute.podCount: must be >= 2')
    await problem(
      await create({ type: 'MPI', compute: { gpuTypeId: A100, gpuCountPerPod: 1, podCount: 2 } }),
      422,
    )
    await problem(
      await create({ compute: { gpuTypeId: A100, gpuCountPerPod: 1, podCount: 251 } }),
      422,
    )
    await problem(
      await create({
        image: undefined,
        compute: { gpuTypeId: A100, gpuCountPerPod: 1, podCount: 2 },
      }),
      422,
    )
    await problem(
      await create({ compute: { gpuTypeId: 'RTX 9999', gpuCountPerPod: 1, podCount: 2 } }),
      400,
    )
    await problem(
      await create({
        compute: { gpuTypeId: 'AMD Instinct MI300X OAM', gpuCountPerPod: 1, podCount: 2 },
      }),
      400,
    )
  })

  it('places a cluster only on hosts with the labels it asks for (hostLabels)', async () => {
    const asked = {
      name: 'ib',
      type: 'TRAINING',
      image: 'busybox',
      args: 'sleep 300',
      compute: { gpuTypeId: H100, gpuCountPerPod: 4, podCount: 2 },
      hostLabels: ['ib=true'],
    }
    const refused = await problem(await call('POST', '/v2/clusters', asked, otherKey), 409)
    expect(refused.detail).toContain('no host has ib=true')
    const bad = await problem(
      await call('POST', '/v2/clusters', { ...asked, hostLabels: ['not a label'] }, otherKey),
      422,
    )
    expect(bad.detail).toMatch(/^hostLabels: /)

    await json(
      await call('POST', '/v2/admin/hosts', {
        id: 'ib-h100-1',
        dataCenterId: 'EU-RO-1',
        gpu: { typeId: H100, count: 8 },
        vcpus: 64,
        memoryGb: 512,
        labels: { ib: 'true' },
      }),
      201,
    )
    const cluster = await json<Json>(await call('POST', '/v2/clusters', asked, otherKey), 201)
    expect(cluster.dataCenterId).toBe('EU-RO-1')
    const { pods } = await json<{ pods: Json[] }>(
      await call('GET', `/v2/clusters/${cluster.id}/pods`, undefined, otherKey),
    )
    expect(pods.map((p) => p.hostLabels)).toEqual([['ib=true'], ['ib=true']])
    const onHost = await json<Json>(await call('GET', '/v2/admin/hosts/ib-h100-1'))
    expect(onHost.pods.map((p: Json) => p.id).sort()).toEqual(pods.map((p) => p.id).sort())

    // GraphQL's createCluster takes the extension too.
    const gql = await json<Json>(
      await call(
        'POST',
        '/graphql',
        {
          query: `mutation { createCluster(input: { clusterName: "gql-ib", gpuTypeId: "${H100}", podCount: 2, gpuCountPerPod: 4, imageName: "busybox", hostLabels: ["ib=false"] }) { id } }`,
        },
        otherKey,
      ),
    )
    expect(gql.errors?.[0]?.message, JSON.stringify(gql)).toContain('no host has ib=false')

    expect((await call('DELETE', `/v2/clusters/${cluster.id}`, undefined, otherKey)).status).toBe(
      204,
    )
    const deadline = Date.now() + 20_000
    let removed = await call('DELETE', '/v2/admin/hosts/ib-h100-1')
    while (removed.status !== 204 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      removed = await call('DELETE', '/v2/admin/hosts/ib-h100-1')
    }
    expect(removed.status).toBe(204)
  })

  it('has CLI commands: podyard clusters', async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const cli = (...args: string[]) => runCli(['clusters', ...args, ...flags])
    const created = await cli(
      'create',
      '--name',
      'cli',
      '--gpu',
      A100,
      '--gpu-count',
      '2',
      '--pods',
      '2',
      '--image',
      'busybox',
      '--json',
    )
    expect(created.code, created.stderr).toBe(0)
    const cluster = JSON.parse(created.stdout) as Json
    expect(cluster.compute).toEqual({ gpuTypeId: A100, gpuCountPerPod: 2, podCount: 2 })
    const list = await cli('list')
    expect(list.stdout).toMatch(/ID\s+NAME\s+TYPE\s+COMPUTE\s+DATA CENTER\s+PODS\s+PRIMARY/)
    expect(list.stdout).toContain(`${cluster.id}  cli`)
    const pods = await cli('pods', cluster.id)
    expect(pods.stdout).toMatch(/RANK\s+ROLE\s+POD\s+NAME\s+STATUS\s+ADDRESS\n\s*0 /)
    expect((await cli('rename', cluster.id, 'cli-2')).stdout).toBe(
      `Renamed cluster ${cluster.id} to cli-2.\n`,
    )
    expect((await cli('delete', cluster.id)).stdout).toBe(
      `Deleted cluster ${cluster.id} and its pods.\n`,
    )
    const gone = await cli('get', cluster.id)
    expect(gone.code).not.toBe(0)
    expect(gone.stderr).toContain(`cluster ${cluster.id} not found`)
  }, 60_000)
})

describe('cluster billing', () => {
  const HOUR = 3_600_000
  const clock = new ManualClock('2026-03-02T10:00:00.000Z')
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform(
      { billing: { meterIntervalMs: 24 * HOUR, enforce: false } },
      { clock },
    )
  })
  afterAll(() => platform.close())

  it("bills a cluster its pods' usage, grouped by cluster, even after it is deleted", async () => {
    const cluster = await json<Json>(
      await platform.call('/v2/clusters', {
        method: 'POST',
        json: {
          name: 'billed',
          type: 'TRAINING',
          image: 'busybox',
          disk: 10,
          compute: { gpuTypeId: A100, gpuCountPerPod: 2, podCount: 2 },
        },
      }),
      201,
    )
    const { pods } = await json<{ pods: Json[] }>(
      await platform.call(`/v2/clusters/${cluster.id}/pods`),
    )
    // A pod that is not in the cluster is not billed to it.
    const loose = await json<Json>(
      await platform.call('/v2/pods', {
        method: 'POST',
        json: { name: 'loose', image: 'busybox', gpu: { id: A100, count: 1 } },
      }),
      201,
    )
    clock.advance(HOUR)
    await platform.meter.tick()
    expect((await platform.call(`/v2/clusters/${cluster.id}`, { method: 'DELETE' })).status).toBe(
      204,
    )
    await platform.call(`/v2/pods/${loose.id}`, { method: 'DELETE' })
    const report = await json<Json>(
      await platform.call(
        '/v2/billing/clusters?bucketSize=hour&startTime=2026-03-02T10:00:00Z&endTime=2026-03-02T11:00:00Z',
      ),
    )
    const gpuHour = pods.reduce((sum: number, pod: Json) => sum + pod.cost, 0)
    expect(report.records).toHaveLength(1)
    expect(report.records[0]).toMatchObject({
      startTime: '2026-03-02T10:00:00.000Z',
      endTime: '2026-03-02T11:00:00.000Z',
      clusterId: cluster.id,
      gpuAmount: gpuHour,
      networkingAmount: 0,
    })
    expect(report.records[0].diskAmount).toBeGreaterThan(0)
    expect(report.records[0].totalAmount).toBeCloseTo(
      report.records[0].gpuAmount + report.records[0].diskAmount,
      6,
    )
    expect(report.metadata).toMatchObject({ recordCount: 1, uniqueClusterCount: 1 })
    const filtered = await json<Json>(
      await platform.call(
        `/v2/billing/clusters?bucketSize=hour&startTime=2026-03-02T10:00:00Z&clusterId=nope`,
      ),
    )
    expect(filtered.records).toEqual([])
  })
})
