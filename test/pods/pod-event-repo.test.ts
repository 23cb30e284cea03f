import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Store } from '../../src/store/open-store.js'
import { KyselyPodEventRepo } from '../../src/store/pod-repo.js'
import { testStores } from '../support/stores.js'

const TS = '2026-01-01T00:00:00.000Z'

/**
 * Pods' system log lines are group-committed (src/shared/write-batcher.ts): lines appended at
 * the same time go out in one insert, each caller's promise settling once its line is stored.
 */
describe.each(testStores())('pod system log lines on $name', ({ open }) => {
  let store: Store
  let events: KyselyPodEventRepo

  beforeEach(async () => {
    store = await open()
    events = new KyselyPodEventRepo(store.db)
  })
  afterEach(async () => {
    await store.close()
  })

  it('stores every line appended at once, each pod in the order its lines were appended', async () => {
    const pods = ['pod-a', 'pod-b', 'pod-c']
    // 150 lines in one turn: more than one batch (64 a batch).
    await Promise.all(
      Array.from({ length: 150 }, (_, i) => events.append(pods[i % 3]!, TS, `line ${i}`)),
    )
    for (const [p, podId] of pods.entries()) {
      const lines = await events.list(podId, {})
      const expected = Array.from({ length: 50 }, (_, k) => `line ${3 * k + p}`)
      expect(lines.map((l) => l.line)).toEqual(expected)
      // seq grows with the order of appends, so a reader resuming after a seq misses nothing.
      const seqs = lines.map((l) => l.seq)
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs)
    }
  })

  it("has a line stored when its append's promise settles", async () => {
    await events.append('pod-d', TS, 'first')
    expect((await events.list('pod-d', {})).map((l) => l.line)).toEqual(['first'])
    const second = events.append('pod-d', TS, 'second')
    const third = events.append('pod-d', TS, 'third')
    await second
    expect((await events.list('pod-d', {})).map((l) => l.line)).toContain('second')
    await third
    expect((await events.list('pod-d', {})).map((l) => l.line)).toEqual([
      'first',
      'second',
      'third',
    ])
  })
})
