import { describe, expect, it } from 'vitest'
import {
  isLockConflict,
  LOCK_CONFLICT_ATTEMPTS,
  retryLockConflicts,
} from './lock-conflict-retry.js'

const failure = (code: string) => Object.assign(new Error(`failed with ${code}`), { code })

describe('retryLockConflicts', () => {
  it('runs a transaction again after a deadlock or a serialization failure', async () => {
    const codes = ['40P01', '40001']
    let runs = 0
    const result = await retryLockConflicts(async () => {
      runs += 1
      const code = codes.shift()
      if (code) throw failure(code)
      return 'done'
    })
    expect(result).toBe('done')
    expect(runs).toBe(3)
  })

  it('gives up after a bounded number of runs, with the last error', async () => {
    let runs = 0
    await expect(
      retryLockConflicts(async () => {
        runs += 1
        throw failure('40P01')
      }),
    ).rejects.toThrow('failed with 40P01')
    expect(runs).toBe(LOCK_CONFLICT_ATTEMPTS)
  })

  it('does not retry other errors', async () => {
    let runs = 0
    await expect(
      retryLockConflicts(async () => {
        runs += 1
        throw failure('23505')
      }),
    ).rejects.toThrow('failed with 23505')
    expect(runs).toBe(1)
  })

  it('finds the code on a wrapped error', () => {
    expect(isLockConflict(new Error('outer', { cause: failure('40001') }))).toBe(true)
    expect(isLockConflict(new Error('plain'))).toBe(false)
    expect(isLockConflict(undefined)).toBe(false)
  })
})
