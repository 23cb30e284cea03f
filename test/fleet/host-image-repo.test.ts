import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/open-store.js'
import { KyselyHostImageRepo } from '../../src/store/host-image-repo.js'
import { testStores } from '../support/stores.js'

/**
 * Images on hosts (migration 0029) on each store: a pull is claimed once per host and image, so
 * that two replicas never pull one image on one host at once; a finished or stale claim may be
 * taken again; progress is kept while it runs.
 */
describe.each(testStores())('host images on $name', ({ open }) => {
  let store: Store
  beforeEach(async () => {
    store = await open()
  })
  afterEach(() => store.close())

  const at = (second: number) => new Date(Date.UTC(2026, 10, 28, 0, 0, second)).toISOString()

  it('claims a pull once, keeps its progress, and lets a finished or stale claim be taken again', async () => {
    const repo = new KyselyHostImageRepo(store.db)
    expect(await repo.claim('gpu-1', 'team/app:1', at(0), at(-60))).toBe(true)
    // The second replica's claim while the first pulls: refused, it joins by watching the row.
    expect(await repo.claim('gpu-1', 'team/app:1', at(1), at(-59))).toBe(false)
    // Another host, another image: claims of their own.
    expect(await repo.claim('gpu-2', 'team/app:1', at(1), at(-59))).toBe(true)
    expect(await repo.claim('gpu-1', 'team/app:2', at(1), at(-59))).toBe(true)

    await repo.progress('gpu-1', 'team/app:1', 3_000_000_000, 6_000_000_000, at(2))
    expect(await repo.list({ hostId: 'gpu-1', image: 'team/app:1' })).toEqual([
      {
        hostId: 'gpu-1',
        image: 'team/app:1',
        state: 'PULLING',
        reason: null,
        bytesDone: 3_000_000_000,
        bytesTotal: 6_000_000_000,
        startedAt: at(0),
        updatedAt: at(2),
      },
    ])
    await repo.finish('gpu-1', 'team/app:1', 'PRESENT', null, at(3))
    await repo.finish('gpu-2', 'team/app:1', 'FAILED', 'manifest unknown', at(3))
    expect(
      (await repo.list({ image: 'team/app:1' })).map((r) => [r.hostId, r.state, r.reason]),
    ).toEqual([
      ['gpu-1', 'PRESENT', null],
      ['gpu-2', 'FAILED', 'manifest unknown'],
    ])
    // Finished: a new pull may claim it (the image may have been removed since).
    expect(await repo.claim('gpu-2', 'team/app:1', at(4), at(-56))).toBe(true)
    expect((await repo.list({ hostId: 'gpu-2' }))[0]).toMatchObject({
      state: 'PULLING',
      reason: null,
    })

    // A claim not updated since before `staleBefore` (its replica stopped) is taken over.
    expect(await repo.claim('gpu-1', 'team/app:2', at(70), at(10))).toBe(true)
    expect(await repo.claim('gpu-1', 'team/app:2', at(71), at(11))).toBe(false)
    expect((await repo.list()).map((r) => `${r.hostId} ${r.image}`)).toEqual([
      'gpu-1 team/app:1',
      'gpu-1 team/app:2',
      'gpu-2 team/app:1',
    ])
  })
})
