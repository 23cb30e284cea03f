import type { WorkloadStats } from '../driver.js'

/** The parts of GET /containers/{id}/stats?stream=false that podyard reads (cgroup v1 or v2). */
export interface DockerStats {
  cpu_stats?: {
    cpu_usage?: { total_usage?: number }
    system_cpu_usage?: number
    online_cpus?: number
  }
  precpu_stats?: {
    cpu_usage?: { total_usage?: number }
    system_cpu_usage?: number
  }
  memory_stats?: {
    usage?: number
    limit?: number
    stats?: Record<string, number>
  }
}

function percent(value: number): number {
  if (!Number.isFinite(value)) return 0
  return Math.min(100, Math.max(0, Math.round(value)))
}

/**
 * CPU as a percent of the workload's vCPUs (Docker's `docker stats` figure, which is a percent
 * of one core, divided by the vCPUs) and memory without the page cache (inactive_file on
 * cgroup v2, total_inactive_file or cache on v1) as a percent of the workload's memory; both
 * whole numbers clamped to 0..100. `vcpus` and `memoryBytes` come from the container's limits.
 */
export function workloadStatsOf(
  stats: DockerStats,
  vcpus: number,
  memoryBytes: number,
): WorkloadStats {
  const cpu = stats.cpu_stats ?? {}
  const pre = stats.precpu_stats ?? {}
  const cpuDelta = (cpu.cpu_usage?.total_usage ?? 0) - (pre.cpu_usage?.total_usage ?? 0)
  const systemDelta = (cpu.system_cpu_usage ?? 0) - (pre.system_cpu_usage ?? 0)
  const online = cpu.online_cpus ?? 1
  const cores = cpuDelta > 0 && systemDelta > 0 ? (cpuDelta / systemDelta) * online : 0
  const cpuPercent = vcpus > 0 ? (cores * 100) / vcpus : 0

  const memory = stats.memory_stats ?? {}
  const detail = memory.stats ?? {}
  const cache = detail.inactive_file ?? detail.total_inactive_file ?? detail.cache ?? 0
  const used = Math.max(0, (memory.usage ?? 0) - cache)
  const limit = memoryBytes > 0 ? memoryBytes : (memory.limit ?? 0)
  const memoryPercent = limit > 0 ? (used * 100) / limit : 0

  // A busy workload that used a sliver of a core still shows as busy, not as 0.
  return {
    cpuPercent: cpuPercent > 0 && cpuPercent < 1 ? 1 : percent(cpuPercent),
    memoryPercent: percent(memoryPercent),
  }
}
