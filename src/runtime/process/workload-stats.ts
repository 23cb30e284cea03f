import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { WorkloadStats } from '../driver.js'
import { CLOCK_TICKS_PER_SECOND, cpuPercent, cpuSample, memoryPercent } from './proc-stat.js'
import {
  currentBootId,
  leaderRunsIn,
  membersIn,
  millisecondsSinceBoot,
  pidExists,
  systemPageSize,
  type ProcessTable,
} from './process-group.js'
import { groupOf, type Tracked } from './tracked-workload.js'

/**
 * Least time a stats() measurement covers: the first one covers the workload's life so far
 * (waiting until it is this old), later ones the time since the previous call.
 */
export const STATS_SAMPLE_MS = 200
/** A previous stats() sample older than this says little about now; measure afresh. */
const STATS_SAMPLE_MAX_AGE_MS = 60_000
/** A read of the process table this recent serves a stats() call (measurements share reads). */
const STATS_TABLE_MAX_AGE_MS = 1000

/**
 * A workload's CPU and memory use, undefined once it ended. Reads the process table (shared
 * with the other measurements and stops running at the time), so measuring many workloads at
 * once costs a few reads of /proc, not one each. Keeps its sample in `tracked.cpu` for the
 * next measurement.
 */
export async function measureWorkload(
  tracked: Tracked,
  processes: ProcessTable,
): Promise<WorkloadStats | undefined> {
  // Ended (known, or its leader's pid is free): no need to look further.
  if (tracked.settled || tracked.record.bootId !== currentBootId()) return undefined
  if (!pidExists(tracked.record.pid)) return undefined
  const group = groupOf(tracked.record)
  const asked = performance.now()
  // Not in a read up to a second old: the read may be older than the workload; a fresh one.
  if (
    !leaderRunsIn(await processes.read(asked - STATS_TABLE_MAX_AGE_MS), group) &&
    !leaderRunsIn(await processes.read(asked), group)
  ) {
    return undefined
  }
  let previous = tracked.cpu
  const startTicks = tracked.record.processStartTicks
  if (previous === undefined && startTicks !== null) {
    // The first measurement: its use since its leader started (at least STATS_SAMPLE_MS of it).
    const aliveMs = millisecondsSinceBoot() - startTicks * (1000 / CLOCK_TICKS_PER_SECOND)
    previous = { atMs: performance.now() - Math.max(0, aliveMs), ticks: new Map() }
  }
  if (previous === undefined || performance.now() - previous.atMs > STATS_SAMPLE_MAX_AGE_MS) {
    const table = await processes.read(asked - STATS_TABLE_MAX_AGE_MS)
    previous = cpuSample(table.startedAt, membersIn(table, group))
  }
  const wait = STATS_SAMPLE_MS - (performance.now() - previous.atMs)
  if (wait > 0) await sleep(wait)
  const table = await processes.read(
    Math.max(previous.atMs + STATS_SAMPLE_MS, asked - STATS_TABLE_MAX_AGE_MS),
  )
  const members = membersIn(table, group)
  const next = cpuSample(table.startedAt, members)
  tracked.cpu = next
  const rssBytes = members.reduce((sum, m) => sum + m.rssPages, 0) * (await systemPageSize())
  return {
    cpuPercent: cpuPercent(previous, next, tracked.record.spec.vcpus),
    memoryPercent: memoryPercent(rssBytes, tracked.record.spec.memoryGb),
  }
}
