import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { BillingMeter } from '../../src/control/billing-meter.js'
import type { Pod } from '../../src/domain/pods/pod.js'
import type { ManagedWorker } from '../../src/domain/serverless/worker.js'
import { demoFleet } from '../../src/domain/catalog/demo-fleet.js'
import { ManualClock } from '../../src/shared/clock.js'
import { newId } from '../../src/shared/ids.js'
import { KyselyCreditRepo } from '../../src/store/credit-repo.js'
import { KyselyEndpointRepo } from '../../src/store/endpoint-repo.js'
import { KyselyNetworkVolumeRepo } from '../../src/store/network-volume-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { podStoreOf } from '../../src/store/pod-repo.js'
import { KyselyUsageRepo } from '../../src/store/usage-repo.js'
import { KyselyWorkerRepo } from '../../src/store/worker-repo.js'
import { addTestAccount, testStores } from '../support/stores.js'

const T0 = '2026-01-01T00:00:00.000Z'
const MIN = 60_000
const HOUR = 60 * MIN

function podOf(accountId: string): Pod {
  return {
    id: newId.pod(),
    accountId,
    name: 'metered',
    image: 'img',
    args: '',
    disk: 10,
    ports: [],
    env: {},
    registry: null,
    compute: { kind: 'gpu', gpuTypeId: 'NVIDIA L4', gpuCount: 1 },
    mounts: {},
    cloud: 'SECURE',
    dataCenterIds: [],
    dataCenterId: 'EU-RO-1',
    hostId: 'h1',
    templateId: null,
    locked: false,
    globalNetworking: false,
    globalIp: null,
    status: 'RUNNING',
    statusReason: null,
    hourlyPrice: 1,
    gpuIndices: [0],
    portMappings: [],
    generation: 1,
    crashRestarts: 0,
    createdAt: T0,
    startedAt: T0,
    lastStatusChange: T0,
    terminatedAt: null,
    version: 1,
  }
}

function workerOf(accountId: string): ManagedWorker {
  return {
    id: newId.pod(),
    endpointId: 'endpointmetered',
    accountId,
    version: 1,
    keyGeneration: 1,
    phase: 'READY',
    reason: null,
    hostId: 'h1',
    dataCenterId: 'EU-RO-1',
    gpuTypeId: null,
    cpuFlavorId: 'cpu3c',
    gpuCount: 0,
    gpuIndices: [],
    vcpus: 2,
    memoryGb: 4,
    image: 'img',
    createdAt: T0,
    startedAt: T0,
    phaseChangedAt: T0,
  }
}

// Exact expectations (docs/billing.md, "Rounding"): floor(rate × time) per category.
const POD_GPU_2H30 = 2_500_000_000 // $1/h for 2.5 h
const POD_DISK_2H30 = Math.floor((10 * 100_000_000 * 2.5 * HOUR) / (720 * HOUR)) // 10 GB at $0.10/GB-month
const VOLUME_3H = Math.floor((100 * 70_000_000 * 3 * HOUR) / (720 * HOUR)) // 100 GB at $0.07
const WORKER_2H = 120_000_000 // cpu3c × 2 vCPUs = $0.06/h, until it is stopped at 2 h

describe.each(testStores())('the billing meter on $name', ({ open }) => {
  let store: Store
  let clock: ManualClock
  let accountId: string
  const meterOf = () =>
    new BillingMeter({
      usage: new KyselyUsageRepo(store.db),
      pods: podStoreOf(store).pods,
      workers: new KyselyWorkerRepo(store.db),
      endpoints: new KyselyEndpointRepo(store.db),
      volumes: new KyselyNetworkVolumeRepo(store.db),
      prices: demoFleet.prices,
      clock,
      logger: pino({ level: 'silent' }),
    })

  beforeEach(async () => {
    store = await open()
    clock = new ManualClock(T0)
    accountId = await addTestAccount(store)
    await new KyselyCreditRepo(store.db).append({
      id: newId.creditEntry(),
      accountId,
      amountNano: 100_000_000_000,
      kind: 'credit',
      note: 'test',
      createdBy: null,
      createdAt: T0,
    })
  })
  afterEach(async () => {
    await store.close()
  })

  it('charges pods, workers and volumes per second, exactly once across a restart', async () => {
    const pods = podStoreOf(store).pods
    const pod = podOf(accountId)
    await pods.insert(pod)
    const worker = workerOf(accountId)
    const workers = new KyselyWorkerRepo(store.db)
    await workers.insert(worker)
    const volumes = new KyselyNetworkVolumeRepo(store.db)
    const volumeId = newId.networkVolume()
    await volumes.insert({
      id: volumeId,
      accountId,
      name: 'v',
      sizeGb: 100,
      dataCenterId: 'EU-RO-1',
      type: 'STANDARD',
      createdAt: T0,
      updatedAt: T0,
    })

    let meter = meterOf()
    clock.set(Date.parse(T0) + 30 * MIN)
    await meter.tick()
    clock.set(Date.parse(T0) + 90 * MIN + 1234)
    await meter.tick()
    // A restart: a new meter from the stored state, first at the same instant.
    meter = meterOf()
    await meter.tick()
    clock.set(Date.parse(T0) + 2 * HOUR)
    await meter.tick()
    // The worker stops (its row goes) and the pod is stopped at 2 h 30.
    await workers.delete(worker.id)
    await pods.update({
      ...pod,
      status: 'EXITED',
      lastStatusChange: new Date(Date.parse(T0) + 150 * MIN).toISOString(),
      version: 2,
    })
    clock.set(Date.parse(T0) + 3 * HOUR)
    await meter.tick()
    await meterOf().tick()

    const usage = new KyselyUsageRepo(store.db)
    const records = await usage.records({
      accountId,
      fromIso: T0,
      toIso: '2026-01-02T00:00:00.000Z',
      resourceKinds: ['pod', 'serverless', 'networkVolume', 'endpoint'],
    })
    const sum = (kind: string, category?: string) =>
      records
        .filter((r) => r.resourceKind === kind && (!category || r.category === category))
        .reduce((s, r) => s + r.amountNano, 0)
    expect(sum('pod', 'podGpu')).toBe(POD_GPU_2H30)
    expect(sum('pod', 'podDisk')).toBe(POD_DISK_2H30)
    expect(sum('networkVolume', 'storageStandard')).toBe(VOLUME_3H)
    expect(sum('serverless', 'serverlessCpu')).toBe(WORKER_2H)
    expect(
      records.filter((r) => r.category === 'podGpu').map((r) => [r.bucketStart, r.amountNano]),
    ).toEqual([
      ['2026-01-01T00:00:00.000Z', 1_000_000_000],
      ['2026-01-01T01:00:00.000Z', 1_000_000_000],
      ['2026-01-01T02:00:00.000Z', 500_000_000],
    ])

    const total = POD_GPU_2H30 + POD_DISK_2H30 + VOLUME_3H + WORKER_2H
    const credits = new KyselyCreditRepo(store.db)
    expect((await credits.credit(accountId))!.balanceNano).toBe(100_000_000_000 - total)
    const charges = (await credits.entries(accountId, 50)).filter((e) => e.kind === 'charge')
    // One entry per resource and hour, not one per tick: the pod and the volume in
    // hours 0, 1 and 2, the worker's endpoint in hours 0 and 1. The ticks at 30 and 90 min, the
    // restart's and the one at 2 h all add to the entries of their hours; each entry is exactly
    // that resource's usage records of that hour.
    expect(charges).toHaveLength(8)
    expect(charges.reduce((s, e) => s - e.amountNano, 0)).toBe(total)
    const hourOf = (resourceKind: string, resourceId: string, bucketStart: string) =>
      records
        .filter(
          (r) =>
            r.resourceKind === resourceKind &&
            r.resourceId === resourceId &&
            r.bucketStart === bucketStart,
        )
        .reduce((s, r) => s + r.amountNano, 0)
    const hours = [
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T01:00:00.000Z',
      '2026-01-01T02:00:00.000Z',
    ]
    const expected = [
      ...hours.map((h) => [`pod ${pod.id}: usage in the hour from ${h}`, hourOf('pod', pod.id, h)]),
      ...hours.map((h) => [
        `network volume ${volumeId}: usage in the hour from ${h}`,
        hourOf('networkVolume', volumeId, h),
      ]),
      ...hours
        .slice(0, 2)
        .map((h) => [
          `serverless endpoint endpointmetered: usage in the hour from ${h}`,
          hourOf('serverless', 'endpointmetered', h),
        ]),
    ]
    expect(charges.map((e) => [e.note, -e.amountNano]).sort()).toEqual(expected.sort())
  })

  it('bills a stopped worker up to its stop, even when it stopped between two runs', async () => {
    const worker = workerOf(accountId)
    const workers = new KyselyWorkerRepo(store.db)
    await workers.insert(worker)
    const meter = meterOf()
    clock.set(Date.parse(T0) + 2 * HOUR)
    await meter.tick()
    // The autoscaler stops it at 2 h 30; its record stays, STOPPED, for the meter.
    const stoppedAt = new Date(Date.parse(T0) + 150 * MIN).toISOString()
    await workers.update({ ...worker, phase: 'STOPPED', phaseChangedAt: stoppedAt })
    clock.set(Date.parse(T0) + 3 * HOUR)
    await meter.tick()
    await meter.tick()
    const records = await new KyselyUsageRepo(store.db).records({
      accountId,
      fromIso: T0,
      toIso: '2026-01-02T00:00:00.000Z',
      resourceKinds: ['serverless'],
    })
    const cpu = records
      .filter((r) => r.category === 'serverlessCpu')
      .reduce((sum, r) => sum + r.amountNano, 0)
    // cpu3c x 2 vCPUs = $0.06/h for 2.5 h.
    expect(cpu).toBe(150_000_000)
  })

  it('bills a deleted volume up to its deletion and then forgets it', async () => {
    const volumes = new KyselyNetworkVolumeRepo(store.db)
    const volumeId = newId.networkVolume()
    await volumes.insert({
      id: volumeId,
      accountId,
      name: 'v',
      sizeGb: 10,
      dataCenterId: 'EU-RO-1',
      type: 'HIGH_PERFORMANCE',
      createdAt: T0,
      updatedAt: T0,
    })
    const meter = meterOf()
    clock.set(Date.parse(T0) + HOUR)
    await meter.tick()
    await volumes.delete(volumeId, new Date(Date.parse(T0) + 2 * HOUR).toISOString())
    clock.set(Date.parse(T0) + 5 * HOUR)
    await meter.tick()
    await meter.tick()
    const usage = new KyselyUsageRepo(store.db)
    const records = await usage.records({
      accountId,
      fromIso: T0,
      toIso: '2026-01-02T00:00:00.000Z',
      resourceKinds: ['networkVolume'],
      resourceId: volumeId,
    })
    expect(records.reduce((s, r) => s + r.amountNano, 0)).toBe(
      Math.floor((10 * 140_000_000 * 2) / 720),
    )
    expect(await usage.meterStates()).toEqual([])
  })

  it('records public model usage in the hour it happened', async () => {
    const usage = new KyselyUsageRepo(store.db)
    await usage.record(accountId, {
      resourceKind: 'endpoint',
      resourceId: 'sdxl-turbo',
      category: 'endpoint',
      amountNano: 5_000_000,
      at: '2026-01-01T03:59:59.999Z',
    })
    await usage.record(accountId, {
      resourceKind: 'endpoint',
      resourceId: 'sdxl-turbo',
      category: 'endpoint',
      amountNano: 1_000_000,
      at: new Date('2026-01-01T03:00:00.000Z'),
    })
    expect(
      await usage.records({
        accountId,
        fromIso: T0,
        toIso: '2026-01-02T00:00:00.000Z',
        resourceKinds: ['endpoint'],
      }),
    ).toEqual([
      {
        accountId,
        resourceKind: 'endpoint',
        resourceId: 'sdxl-turbo',
        category: 'endpoint',
        bucketStart: '2026-01-01T03:00:00.000Z',
        amountNano: 6_000_000,
      },
    ])
  })
})
