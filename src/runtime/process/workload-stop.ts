import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ProcStat } from './proc-stat.js'
import {
  currentBootId,
  followProcesses,
  groupLives,
  isChildlessNamespaceInit,
  leaderIsStranger,
  membersIn,
  signalGroup,
  signalPid,
  withDescendants,
  type GroupIdentity,
  type ProcessTable,
} from './process-group.js'
import { groupOf } from './tracked-workload.js'
import type { WorkloadRecord } from './workload-record.js'

/**
 * A read of the process table this recent finds the members of a workload being stopped (stops
 * share reads); what the workload started since is found from its leader and those members.
 */
const STOP_TABLE_MAX_AGE_MS = 250
/** How often a stop looks whether the processes it follows are gone, at most. */
const STOP_POLL_MS = 25
/** How often a stop that lasts looks for group members it does not follow (waitForEnd). */
const STOP_RESCAN_MS = 1_000
/**
 * After SIGKILL a process may still be leaving (a large address space to free, a read from a
 * dead NFS server in D state); past this bound stop() reports the survivors.
 */
const KILL_WAIT_MS = 10_000

/**
 * SIGTERM to the workload's processes, SIGKILL to what is left after `graceMs`. The processes
 * to stop are found in a read of /proc shared with the stops (and measurements) running at the
 * same moment, with the leader and every descendant of those added just before the signal (the
 * read may be older than the workload's newest processes); the wait then follows only them and
 * their children (a read of each one's /proc entry), and a process found meanwhile gets the
 * signal too: one started by a process that ignores it (the init of a sandbox's PID namespace)
 * would never hear it otherwise. Stopping many workloads thus costs each its own processes, not
 * a read of every process on the machine. Zombies count as ended: an init that reaps orphans
 * late (some containers') does not hold a stop up.
 */
export async function stopGroup(
  record: WorkloadRecord,
  graceMs: number,
  processes: ProcessTable,
): Promise<void> {
  const group = groupOf(record)
  if (record.bootId === currentBootId() && groupLives(group.pgid)) {
    const read = await liveMembers(group, processes)
    if (read !== undefined) {
      const roots = new Map(read.map((m) => [m.pid, m.starttime]))
      if (group.leaderStartTicks !== null) roots.set(group.pgid, group.leaderStartTicks)
      const members = withDescendants(roots)
      signalGroup(group, members, 'SIGTERM')
      const known = new Map(members.map((m) => [m.pid, m.starttime]))
      const rescan = () => liveMembers(group, processes)
      if (!(await waitForEnd(known, graceMs, 'SIGTERM', new Set(known.keys()), rescan))) {
        const left = (await liveMembers(group, processes)) ?? []
        signalGroup(group, left, 'SIGKILL')
        for (const member of left) known.set(member.pid, member.starttime)
        if (!(await waitForEnd(known, KILL_WAIT_MS, 'SIGKILL'))) {
          const pids = [...known.keys()].join(', ')
          throw new Error(`workload ${record.spec.id}: processes ${pids} survived SIGKILL`)
        }
      }
    }
  }
}

/**
 * The group's members and session members that left it, from a shared read of the process
 * table; undefined when the group ended and its leader's pid is another process's now.
 */
async function liveMembers(
  group: GroupIdentity,
  processes: ProcessTable,
): Promise<ProcStat[] | undefined> {
  if (await leaderIsStranger(group)) return undefined
  return membersIn(await processes.read(performance.now() - STOP_TABLE_MAX_AGE_MS), group)
}

/**
 * Until the `known` processes (and the children they had) are gone or zombies (true), or `ms`
 * pass (false). Each one gets `signal` once, unless in `signalled` already (a process found
 * meanwhile too: one started by a process that ignores the signal would never hear it
 * otherwise); without `signalled`, every one still there gets it again at each look. With
 * `rescan`, a wait that lasts adds the group's members every STOP_RESCAN_MS: a process whose
 * parent ended before the wait saw it (the sandbox's PID-namespace init, orphaned when bwrap's
 * outer process died of the signal as it started) is in no known process's children, and its
 * command would otherwise run on, unsignalled, through the whole grace. At each rescan, a
 * known PID-namespace init without a child gets SIGKILL (isChildlessNamespaceInit): orphaned
 * before bwrap's outer process let it start the command, it would wait through the grace.
 */
async function waitForEnd(
  known: Map<number, number>,
  ms: number,
  signal: NodeJS.Signals,
  signalled?: Set<number>,
  rescan?: () => Promise<ProcStat[] | undefined>,
): Promise<boolean> {
  const deadline = performance.now() + ms
  let rescanAt = performance.now() + STOP_RESCAN_MS
  for (let pause = 2; ; pause = Math.min(STOP_POLL_MS, pause * 2)) {
    if (rescan && performance.now() >= rescanAt) {
      for (const member of (await rescan()) ?? []) {
        if (!known.has(member.pid)) known.set(member.pid, member.starttime)
      }
      // A sandbox's init with no command to wait for never hears SIGTERM: nothing of the
      // workload's own runs in it to give a grace to.
      for (const [pid, startTicks] of known) {
        if (isChildlessNamespaceInit(pid, startTicks)) signalPid(pid, 'SIGKILL')
      }
      rescanAt = performance.now() + STOP_RESCAN_MS
    }
    if (followProcesses(known) === 0) return true
    for (const pid of known.keys()) {
      if (signalled?.has(pid)) continue
      signalPid(pid, signal)
      signalled?.add(pid)
    }
    if (performance.now() >= deadline) return false
    await sleep(pause)
  }
}
