import { describe, expect, it } from 'vitest'
import {
  COUNTS_FRESH_MS,
  COUNTS_REUSE_MS_PER_JOB,
  CountsCache,
  LARGE_COUNT,
} from './counts-cache.js'

/** A cache over a counter of reads, on a clock the test moves. */
function setup() {
  const clock = { now: 0 }
  let reads = 0
  let jobs = 10
  const cache = new CountsCache<number>(
    (counted) => counted,
    () => clock.now,
  )
  const read = async () => {
    reads++
    return jobs
  }
  return {
    clock,
    cache,
    get: () => cache.get('ep', read),
    reads: () => reads,
    setJobs: (n: number) => (jobs = n),
  }
}

describe('CountsCache', () => {
  it('shares one read among the callers that ask while it runs', async () => {
    const { get, reads } = setup()
    const answers = await Promise.all(Array.from({ length: 16 }, () => get()))
    expect(answers).toEqual(Array.from({ length: 16 }, () => 10))
    expect(reads()).toBe(1)
  })

  it('reuses a count for 1 s while nothing is written, and reads after a write', async () => {
    const { clock, cache, get, reads, setJobs } = setup()
    await get()
    clock.now = COUNTS_FRESH_MS - 1
    await get()
    expect(reads()).toBe(1)
    clock.now = COUNTS_FRESH_MS
    await get()
    expect(reads()).toBe(2)
    setJobs(11)
    cache.written('ep')
    expect(await get()).toBe(11)
    expect(reads()).toBe(3)
  })

  it('reuses a large count, writes or not, for 1 s per 100 000 jobs', async () => {
    const { clock, cache, get, reads, setJobs } = setup()
    expect(COUNTS_REUSE_MS_PER_JOB * 100_000).toBe(1_000)
    // Just under the bound a write makes the next caller read.
    setJobs(LARGE_COUNT - 1)
    await get()
    cache.written('ep')
    await get()
    expect(reads()).toBe(2)
    setJobs(1_000_000)
    cache.written('ep')
    await get()
    cache.written('ep')
    clock.now = 9_999
    await get()
    expect(reads()).toBe(3)
    clock.now = 10_000
    await get()
    expect(reads()).toBe(4)
  })

  it('does not hand out a read that started before a write', async () => {
    const { cache, get, reads } = setup()
    const first = get()
    cache.written('ep')
    const second = get()
    await Promise.all([first, second])
    expect(reads()).toBe(2)
  })
})
