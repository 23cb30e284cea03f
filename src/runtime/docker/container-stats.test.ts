import { describe, expect, it } from 'vitest'
import { workloadStatsOf } from './container-stats.js'

const GIB = 1024 ** 3

describe('workloadStatsOf', () => {
  it('gives CPU as a percent of the vCPUs and memory without inactive files', () => {
    const stats = {
      cpu_stats: { cpu_usage: { total_usage: 2_000 }, system_cpu_usage: 10_000, online_cpus: 4 },
      precpu_stats: { cpu_usage: { total_usage: 1_000 }, system_cpu_usage: 6_000 },
      memory_stats: { usage: GIB, limit: 4 * GIB, stats: { inactive_file: GIB / 2 } },
    }
    // 1000/4000 of 4 cores = 1 core = 50 % of 2 vCPUs; 0.5 GiB of 2 GiB = 25 %.
    expect(workloadStatsOf(stats, 2, 2 * GIB)).toEqual({ cpuPercent: 50, memoryPercent: 25 })
  })

  it('clamps to 0..100 and rounds', () => {
    const stats = {
      cpu_stats: { cpu_usage: { total_usage: 9_000 }, system_cpu_usage: 10_000, online_cpus: 2 },
      precpu_stats: { cpu_usage: { total_usage: 0 }, system_cpu_usage: 0 },
      memory_stats: { usage: 3 * GIB, stats: { total_inactive_file: 0 } },
    }
    expect(workloadStatsOf(stats, 1, GIB)).toEqual({ cpuPercent: 100, memoryPercent: 100 })
  })

  it('shows a little CPU use as 1, and nothing without a previous sample', () => {
    const small = {
      cpu_stats: { cpu_usage: { total_usage: 1_001 }, system_cpu_usage: 100_000, online_cpus: 1 },
      precpu_stats: { cpu_usage: { total_usage: 1_000 }, system_cpu_usage: 0 },
    }
    expect(workloadStatsOf(small, 1, GIB).cpuPercent).toBe(1)
    expect(workloadStatsOf({}, 1, GIB)).toEqual({ cpuPercent: 0, memoryPercent: 0 })
  })

  it("falls back to the container's memory limit without an allotment", () => {
    const stats = { memory_stats: { usage: GIB, limit: 4 * GIB, stats: { cache: 0 } } }
    expect(workloadStatsOf(stats, 1, 0).memoryPercent).toBe(25)
  })
})
