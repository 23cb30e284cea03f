import { afterEach, describe, expect, it } from 'vitest'
import { GpuBoard, RESET_SETTLE_MS } from '../../src/domain/hosts/gpu-board.js'
import type { GpuReading } from '../../src/domain/hosts/gpu-health.js'
import { KyselyGpuWithdrawalRepo } from '../../src/store/gpu-withdrawal-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { testStores } from '../support/stores.js'

/**
 * The board of GPU health over a real store (SQLite, and PostgreSQL where
 * PODYARD_TEST_POSTGRES_URL is set): a withdrawal is written before it counts, so that a
 * restarted server (a new board on the same store) and another replica (a second board) see it,
 * and each GPU is withdrawn once whoever reads it.
 */
const fine: GpuReading = {
  index: 0,
  uuid: 'GPU-0',
  responding: true,
  utilPercent: 50,
  memoryUsedMib: 100,
  memoryTotalMib: 1000,
  temperatureC: 60,
  powerDrawW: 300,
  throttling: [],
  eccUncorrected: 0,
  retiredPagesPending: false,
  remappedRowsPending: false,
  remappedRowsFailure: false,
  xids: [],
}
const start = Date.parse('2026-11-28T00:00:00.000Z')
let nowMs = start
const at = () => new Date(nowMs).toISOString()

describe.each(testStores())('GpuBoard on $name', (factory) => {
  let store: Store | undefined
  afterEach(async () => {
    await store?.close()
    store = undefined
    nowMs = start
  })
  const board = async () => {
    const made = new GpuBoard(new KyselyGpuWithdrawalRepo(store!.db), at)
    await made.refresh()
    return made
  }

  it('withdraws an unhealthy GPU once, keeps it withdrawn until reset, then accepts old counters', async () => {
    store = await factory.open()
    const gpus = await board()
    expect(await gpus.record('h1', [fine, { ...fine, index: 1 }])).toEqual([])
    const bad = { ...fine, index: 1, eccUncorrected: 2 }
    expect(await gpus.record('h1', [fine, bad])).toEqual([
      { hostId: 'h1', index: 1, reason: '2 uncorrectable ECC errors' },
    ])
    // Withdrawn once; a healthy-looking reading afterwards does not put it back.
    expect(await gpus.record('h1', [fine, bad])).toEqual([])
    expect(await gpus.record('h1', [fine, { ...fine, index: 1 }])).toEqual([])
    expect(gpus.withdrawn()).toEqual({ h1: [1] })
    expect(gpus.statuses('h1')[1]).toMatchObject({
      health: 'WITHDRAWN',
      reason: '2 uncorrectable ECC errors',
    })

    await gpus.record('h1', [fine, bad])
    expect(await gpus.reset('h1', 1)).toMatchObject({ health: 'HEALTHY', reason: null })
    expect(gpus.withdrawn()).toEqual({})
    expect(await gpus.record('h1', [fine, bad])).toEqual([])
    expect(await gpus.record('h1', [fine, { ...bad, eccUncorrected: 3 }])).toHaveLength(1)
  })

  it('forgets the readings and source problems of a host no longer in the fleet', async () => {
    store = await factory.open()
    const gpus = await board()
    await gpus.record('h1', [fine])
    await gpus.record('h2', [fine])
    gpus.setSourceProblem('h2', 'kernel log unreadable')
    gpus.keepHosts(new Set(['h1']))
    expect(gpus.hostIds()).toEqual(['h1'])
    expect(gpus.statuses('h2')).toEqual([])
    expect(gpus.reading('h2', 0)).toBeUndefined()
    expect(gpus.sourceProblem('h2')).toBeUndefined()
    expect(gpus.statuses('h1')).toHaveLength(1)
  })

  it('a reset of a GPU never sampled nor withdrawn is not found', async () => {
    store = await factory.open()
    await expect((await board()).reset('h1', 0)).rejects.toThrow(/not been sampled/)
  })

  it('a restarted server keeps the withdrawal and the counts a reset accepted', async () => {
    store = await factory.open()
    const before = await board()
    await before.record('h1', [
      { ...fine, eccUncorrected: 1 },
      { ...fine, index: 1 },
    ])
    await before.record('h1', [
      { ...fine, eccUncorrected: 1 },
      { ...fine, index: 1, eccUncorrected: 4 },
    ])
    await before.reset('h1', 0)

    const after = await board()
    expect(after.withdrawn()).toEqual({ h1: [1] })
    // Not sampled yet by the new server, the GPU still shows, withdrawn.
    expect(after.statuses('h1')).toMatchObject([
      { index: 1, health: 'WITHDRAWN', reason: '4 uncorrectable ECC errors', sampledAt: null },
    ])
    // GPU 0's one error was accepted before the restart; GPU 1 is not withdrawn again.
    expect(
      await after.record('h1', [
        { ...fine, eccUncorrected: 1 },
        { ...fine, index: 1, eccUncorrected: 4 },
      ]),
    ).toEqual([])
    expect(after.statuses('h1').map((s) => s.health)).toEqual(['HEALTHY', 'WITHDRAWN'])
  })

  it('two replicas: each sees the other one’s withdrawal and reset, and a GPU is withdrawn once', async () => {
    store = await factory.open()
    const a = await board()
    const b = await board()
    const bad = { ...fine, eccUncorrected: 2 }
    const [fromA, fromB] = await Promise.all([a.record('h1', [bad]), b.record('h1', [bad])])
    expect([...fromA, ...fromB]).toEqual([
      { hostId: 'h1', index: 0, reason: '2 uncorrectable ECC errors' },
    ])
    expect(a.withdrawn()).toEqual({ h1: [0] })
    expect(b.withdrawn()).toEqual({ h1: [0] })

    const other = await board()
    // A replica that never sampled the GPU resets it, accepting the count it was withdrawn with.
    await other.reset('h1', 0)
    await a.refresh()
    expect(a.withdrawn()).toEqual({})
    expect(await a.record('h1', [bad])).toEqual([])
    // A round `a` read before the reset may arrive after it learned of the reset: for
    // RESET_SETTLE_MS no reading withdraws the GPU again; the first one after that does.
    expect(await a.record('h1', [{ ...bad, eccUncorrected: 3 }])).toEqual([])
    expect(a.statuses('h1')[0]).toMatchObject({ health: 'HEALTHY' })
    nowMs += RESET_SETTLE_MS
    expect(await a.record('h1', [{ ...bad, eccUncorrected: 3 }])).toEqual([
      { hostId: 'h1', index: 0, reason: '1 uncorrectable ECC error since the last reset' },
    ])
    await b.refresh()
    expect(b.statuses('h1')[0]).toMatchObject({ health: 'WITHDRAWN' })
  })
})
