import { describe, expect, it } from 'vitest'
import {
  CPU_FLAVORS,
  findCpuFlavor,
  isValidVcpuCount,
  largestVcpuCount,
  MIN_VCPU_COUNT,
  vcpuCountsUpTo,
} from './cpu-flavors.js'

describe('cpu flavors', () => {
  it('has the six RunPod flavors with their RAM multipliers', () => {
    expect(CPU_FLAVORS.map((f) => f.id)).toEqual([
      'cpu3c',
      'cpu3g',
      'cpu3m',
      'cpu5c',
      'cpu5g',
      'cpu5m',
    ])
    expect(findCpuFlavor('cpu3c')).toEqual({
      id: 'cpu3c',
      name: 'Compute-Optimized',
      group: 'Gen 3',
      ramGbPerVcpu: 2,
    })
    expect(findCpuFlavor('cpu5g')).toMatchObject({
      name: 'General Purpose',
      group: 'Gen 5',
      ramGbPerVcpu: 4,
    })
    expect(findCpuFlavor('cpu3m')).toMatchObject({ name: 'Memory-Optimized', ramGbPerVcpu: 8 })
    expect(findCpuFlavor('cpu4c')).toBeUndefined()
  })

  it('accepts vcpuCount only as a power of two of at least 2', () => {
    expect(MIN_VCPU_COUNT).toBe(2)
    expect(isValidVcpuCount(0)).toBe(false)
    expect(isValidVcpuCount(1)).toBe(false)
    expect(isValidVcpuCount(2)).toBe(true)
    expect(isValidVcpuCount(3)).toBe(false)
    expect(isValidVcpuCount(4)).toBe(true)
    expect(isValidVcpuCount(64)).toBe(true)
    expect(isValidVcpuCount(-2)).toBe(false)
    expect(isValidVcpuCount(2.5)).toBe(false)
    expect(isValidVcpuCount(2 ** 33)).toBe(true)
  })

  it('finds the largest slot a host can hold, bounded by vCPUs and by memory', () => {
    expect(largestVcpuCount(64, 512, 8)).toBe(64)
    expect(largestVcpuCount(63, 512, 8)).toBe(32)
    expect(largestVcpuCount(64, 511, 8)).toBe(32)
    expect(largestVcpuCount(2, 4, 2)).toBe(2)
    expect(largestVcpuCount(1, 100, 2)).toBe(0)
    expect(largestVcpuCount(8, 3, 2)).toBe(0)
  })

  it('lists valid counts up to a maximum', () => {
    expect(vcpuCountsUpTo(32)).toEqual([2, 4, 8, 16, 32])
    expect(vcpuCountsUpTo(2)).toEqual([2])
    expect(vcpuCountsUpTo(0)).toEqual([])
  })
})
