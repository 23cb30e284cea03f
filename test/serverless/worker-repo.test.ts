import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ManagedWorker } from '../../src/domain/serverless/worker.js'
import { newId } from '../../src/shared/ids.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyWorkerRepo } from '../../src/store/worker-repo.js'
import { addTestAccount, testStores } from '../support/stores.js'

describe.each(testStores())('KyselyWorkerRepo on $name', ({ open }) => {
  let store: Store
  let repo: KyselyWorkerRepo
  let accountId: string

  const worker = (overrides: Partial<ManagedWorker> = {}): ManagedWorker => ({
    id: newId.pod(),
    endpointId: 'ep1',
    accountId,
    version: 3,
    keyGeneration: 2,
    phase: 'STARTING',
    reason: null,
    hostId: 'us-ks-2-rtx4090-1',
    dataCenterId: 'US-KS-2',
    gpuTypeId: 'NVIDIA GeForce RTX 4090',
    cpuFlavorId: null,
    gpuCount: 2,
    gpuIndices: [1, 3],
    vcpus: 32,
    memoryGb: 124,
    image: 'runpod/worker:1',
    createdAt: '2026-01-01T00:00:00.000Z',
    startedAt: '2026-01-01T00:00:01.000Z',
    phaseChangedAt: '2026-01-01T00:00:01.000Z',
    ...overrides,
  })

  beforeEach(async () => {
    store = await open()
    repo = new KyselyWorkerRepo(store.db)
    accountId = await addTestAccount(store)
  })
  afterEach(async () => {
    await store.close()
  })

  it('round-trips every field, and updates and deletes', async () => {
    const w = worker()
    await repo.insert(w)
    expect(await repo.get(w.id)).toEqual(w)
    const pending = worker({
      endpointId: 'ep2',
      phase: 'PENDING',
      reason: 'no capacity: ...',
      hostId: null,
      dataCenterId: null,
      gpuTypeId: null,
      gpuIndices: [],
      startedAt: null,
      createdAt: '2026-01-01T00:00:02.000Z',
    })
    await repo.insert(pending)
    const ready = { ...w, phase: 'READY' as const, phaseChangedAt: '2026-01-01T00:00:05.000Z' }
    await repo.update(ready)
    expect(await repo.listByEndpoint('ep1')).toEqual([ready])
    expect((await repo.listAll()).map((x) => x.id)).toEqual([w.id, pending.id])
    await repo.delete(w.id)
    expect(await repo.get(w.id)).toBeUndefined()
    expect(await repo.listAll()).toEqual([pending])
  })
  it("keeps a failed worker's last lines, replaces them, and forgets them with the worker", async () => {
    const w = worker({ phase: 'UNHEALTHY', reason: 'exited with code 1 before asking for a job' })
    await repo.insert(w)
    expect(await repo.keptLog(w.id)).toBeUndefined()
    const lines = [
      { seq: 7, ts: '2026-01-01T00:00:02.000Z', line: 'loading ü' },
      { seq: 8, ts: '2026-01-01T00:00:02.001Z', line: "Error: Cannot find module 'x'" },
    ]
    await repo.keepLog(w.id, lines)
    expect(await repo.keptLog(w.id)).toEqual(lines)
    await repo.keepLog(w.id, lines.slice(1))
    expect(await repo.keptLog(w.id)).toEqual(lines.slice(1))
    await repo.dropKeptLog(w.id)
    expect(await repo.keptLog(w.id)).toBeUndefined()
    await repo.keepLog(w.id, lines)
    await repo.delete(w.id)
    expect(await repo.keptLog(w.id)).toBeUndefined()
  })
})
