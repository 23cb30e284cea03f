import { describe, expect, it } from 'vitest'
import { outOfMemoryReason } from './out-of-memory.js'

describe('outOfMemoryReason', () => {
  it('names the memory the workload rented', () => {
    expect(outOfMemoryReason('pod', 16)).toBe('out of memory: the pod used its 16 GB')
    expect(outOfMemoryReason('worker', 1)).toBe('out of memory: the worker used its 1 GB')
    expect(outOfMemoryReason('pod', 0.5)).toBe('out of memory: the pod used its 0.5 GB')
    expect(outOfMemoryReason('pod', 2 / 3)).toBe('out of memory: the pod used its 0.67 GB')
  })

  it('says all its memory when the amount is not known', () => {
    expect(outOfMemoryReason('pod', undefined)).toBe('out of memory: the pod used all its memory')
    expect(outOfMemoryReason('worker', 0)).toBe('out of memory: the worker used all its memory')
  })
})
