import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { isGone, parsePageSize, parseProcStat, type ProcStat } from './proc-stat.js'

/**
 * Thin /proc readers for the process driver. Linux only, like the driver. The reads are
 * synchronous: a /proc file is made by the kernel on the spot and read in microseconds, where
 * an asynchronous read costs four trips through the thread pool.
 */

const statBuffer = Buffer.alloc(4096)

export function readProcStatSync(pid: number): ProcStat | undefined {
  let fd: number
  try {
    fd = openSync(`/proc/${pid}/stat`, 'r')
  } catch {
    return undefined
  }
  try {
    const length = readSync(fd, statBuffer, 0, statBuffer.length, 0)
    return parseProcStat(statBuffer.toString('latin1', 0, length))
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}

export async function readProcStat(pid: number): Promise<ProcStat | undefined> {
  return readProcStatSync(pid)
}

let bootId: string | undefined

/**
 * This boot's random id. Start ticks count from boot, so after a reboot a new process can
 * have the pid and start ticks a state file recorded; the boot id tells them apart.
 */
export function currentBootId(): string {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    } catch {
      bootId = ''
    }
  }
  return bootId
}

/** Milliseconds since boot (/proc/uptime): the clock of the start ticks in /proc/<pid>/stat. */
export function millisecondsSinceBoot(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000
}

let pageSize: Promise<number> | undefined

/** Bytes per page, for RSS (4 KiB on x86; arm64 kernels may use 16 or 64 KiB). */
export function systemPageSize(): Promise<number> {
  pageSize ??= (async () => {
    try {
      // The first mapping's header is within the first few hundred bytes.
      const handle = await open('/proc/self/smaps', 'r')
      try {
        const buffer = Buffer.alloc(4096)
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
        return parsePageSize(buffer.toString('utf8', 0, bytesRead)) ?? 4096
      } finally {
        await handle.close()
      }
    } catch {
      return 4096
    }
  })()
  return pageSize
}

/** The leader of a workload's process group, as recorded when it started. */
export interface GroupIdentity {
  pgid: number
  /** Start ticks of the leader (pid == pgid); null when they could not be read. */
  leaderStartTicks: number | null
}

/** Whether the group leader is the very process that was started, and still running. */
export async function leaderIsRunning(group: GroupIdentity): Promise<boolean> {
  if (group.leaderStartTicks === null) return false
  const stat = await readProcStat(group.pgid)
  return stat !== undefined && !isGone(stat) && stat.starttime === group.leaderStartTicks
}

/** Every process readable in /proc now (one read of each /proc/<pid>/stat). */
/** Processes read between two turns of the event loop: a few milliseconds of reading. */
const TABLE_READS_PER_TURN = 256

async function readProcessTable(): Promise<ProcStat[]> {
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return []
  }
  const stats: ProcStat[] = []
  let read = 0
  for (const name of entries) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue
    const stat = readProcStatSync(Number(name))
    if (stat) stats.push(stat)
    if (++read % TABLE_READS_PER_TURN === 0) await nextTurn()
  }
  return stats
}

/** A read of the process table, indexed by pid, process group and session. */
export interface ProcessSnapshot {
  /** When the read began (performance.now()). */
  startedAt: number
  byPid: ReadonlyMap<number, ProcStat>
  byGroup: ReadonlyMap<number, readonly ProcStat[]>
  bySession: ReadonlyMap<number, readonly ProcStat[]>
}

function snapshotOf(startedAt: number, stats: readonly ProcStat[]): ProcessSnapshot {
  const byPid = new Map<number, ProcStat>()
  const byGroup = new Map<number, ProcStat[]>()
  const bySession = new Map<number, ProcStat[]>()
  const file = (index: Map<number, ProcStat[]>, key: number, stat: ProcStat) => {
    const list = index.get(key)
    if (list) list.push(stat)
    else index.set(key, [stat])
  }
  for (const stat of stats) {
    byPid.set(stat.pid, stat)
    file(byGroup, stat.pgrp, stat)
    if (stat.session !== stat.pgrp) file(bySession, stat.session, stat)
  }
  return { startedAt, byPid, byGroup, bySession }
}

/**
 * Reads of the process table, shared: whoever asks gets a read that began after the time it
 * names (the one in flight, or the last one when recent enough), so that stopping or measuring a
 * thousand workloads at once costs a few reads of /proc, not one each (the machine's process
 * count times theirs).
 */
export class ProcessTable {
  private current: Promise<ProcessSnapshot> | undefined
  private currentStartedAt = -Infinity
  private last: ProcessSnapshot | undefined
  /** Reads of /proc made so far. */
  reads = 0

  /** A read that began at or after `startedAfter` (performance.now()). */
  read(startedAfter: number): Promise<ProcessSnapshot> {
    if (this.last && this.last.startedAt >= startedAfter) return Promise.resolve(this.last)
    if (this.current && this.currentStartedAt >= startedAfter) return this.current
    const startedAt = performance.now()
    this.reads += 1
    const read = readProcessTable().then((stats) => {
      const snapshot = snapshotOf(startedAt, stats)
      if (!this.last || this.last.startedAt < startedAt) this.last = snapshot
      return snapshot
    })
    this.current = read
    this.currentStartedAt = startedAt
    void read.finally(() => {
      if (this.current === read) this.current = undefined
    })
    return read
  }
}

/**
 * The workload's live processes in a read of the process table: those in its process group
 * or its session (a shell with job control moves jobs to groups of their own, but they stay
 * in the session). A process that called setsid() itself escapes; only a cgroup or a PID
 * namespace would hold it.
 */
export function membersIn(table: ProcessSnapshot, group: GroupIdentity): ProcStat[] {
  // The kernel does not hand out a pid while it is some process's pgid or sid. So if a
  // process other than our leader now holds the leader's pid, the group has ended, and the
  // processes in a group of that number are a stranger's.
  const leader = table.byPid.get(group.pgid)
  if (leader !== undefined && leader.starttime !== group.leaderStartTicks) return []
  const members = [
    ...(table.byGroup.get(group.pgid) ?? []),
    ...(table.bySession.get(group.pgid) ?? []),
  ]
  return members.filter((s) => !isGone(s))
}

/** Whether the group's leader is in the read, is the very process that was started, and runs. */
export function leaderRunsIn(table: ProcessSnapshot, group: GroupIdentity): boolean {
  const leader = table.byPid.get(group.pgid)
  return leader !== undefined && !isGone(leader) && leader.starttime === group.leaderStartTicks
}

/** Every live process of the workload (membersIn, on a read of its own). */
export async function groupMembers(group: GroupIdentity): Promise<ProcStat[]> {
  return membersIn(snapshotOf(performance.now(), await readProcessTable()), group)
}

/**
 * Whether the group's leader pid now belongs to another process (the group ended and the pid
 * was given out again): then nothing of that number may be signalled. One read of /proc.
 */
export async function leaderIsStranger(group: GroupIdentity): Promise<boolean> {
  const leader = await readProcStat(group.pgid)
  return leader !== undefined && leader.starttime !== group.leaderStartTicks
}

function exists(target: number): boolean {
  try {
    process.kill(target, 0)
    return true
  } catch (error) {
    // EPERM: it exists, as another user's (a sandboxed workload seen by an unprivileged server).
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Whether any process is still in the group, or still among `others`: one kill(0) each, whatever
 * else runs on the machine. A zombie still counts until its parent reaps it.
 */
export function groupLives(pgid: number, others: readonly number[] = []): boolean {
  return exists(-pgid) || others.some((pid) => exists(pid))
}

/** The pids of `pid`'s children (every thread's), from /proc; none when it is gone. */
function childrenOf(pid: number): number[] {
  let threads: string[]
  try {
    threads = readdirSync(`/proc/${pid}/task`)
  } catch {
    return []
  }
  const children: number[] = []
  for (const thread of threads) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${thread}/children`, 'latin1')
      for (const child of text.split(' ')) if (child !== '') children.push(Number(child))
    } catch {
      // The thread ended meanwhile.
    }
  }
  return children
}

/**
 * Follows a workload's processes while it stops: `known` (pid -> start ticks) loses those that
 * ended (gone, a zombie, or their pid now another process's) and gains the live children of
 * those that remain. Returns how many are left. Costs the workload's own processes, never a
 * read of every process on the machine; a process whose parent ended before it was seen (an
 * orphan) is not followed.
 */
export function followProcesses(known: Map<number, number>): number {
  for (const [pid, startTicks] of known) {
    const stat = readProcStatSync(pid)
    if (stat === undefined || stat.starttime !== startTicks || isGone(stat)) {
      known.delete(pid)
      continue
    }
    for (const child of childrenOf(pid)) {
      if (known.has(child)) continue
      const childStat = readProcStatSync(child)
      if (childStat !== undefined && !isGone(childStat)) known.set(child, childStat.starttime)
    }
  }
  return known.size
}

/**
 * The live processes among `roots` (pid -> start ticks) and all their descendants, now: a read
 * of each one's /proc entries, never of every process on the machine.
 */
export function withDescendants(roots: ReadonlyMap<number, number>): ProcStat[] {
  const found: ProcStat[] = []
  const seen = new Set<number>()
  const visit = (pid: number, startTicks: number | undefined) => {
    if (seen.has(pid)) return
    seen.add(pid)
    const stat = readProcStatSync(pid)
    if (stat === undefined || isGone(stat)) return
    if (startTicks !== undefined && stat.starttime !== startTicks) return
    found.push(stat)
    for (const child of childrenOf(pid)) visit(child, undefined)
  }
  for (const [pid, startTicks] of roots) visit(pid, startTicks)
  return found
}

/**
 * Whether `pid`, started at `startTicks` (not another process that took its pid since), is the
 * init of a PID namespace of its own (its last NSpid is 1) with no child: a sandbox's init
 * whose command never started, or has ended. Such an init ignores SIGTERM from outside (the
 * kernel delivers an init only the signals it handles), and bwrap's, orphaned before its outer
 * process let it go on, waits for ever: only SIGKILL ends it.
 */
export function isChildlessNamespaceInit(pid: number, startTicks: number): boolean {
  if (readProcStatSync(pid)?.starttime !== startTicks) return false
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1')
  } catch {
    return false
  }
  const ids = /^NSpid:\s+(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/) ?? []
  return ids.length > 1 && ids.at(-1) === '1' && childrenOf(pid).length === 0
}

/** Whether a process of that pid exists (a zombie too). */
export function pidExists(pid: number): boolean {
  return exists(pid)
}

function sendSignal(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal)
  } catch (error) {
    // Already gone between the scan and the signal.
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
  }
}

/** Signals one process (gone already: nothing to do). */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  sendSignal(pid, signal)
}

/** Signals the whole group, and the session members that left it. */
export function signalGroup(
  group: GroupIdentity,
  members: readonly ProcStat[],
  signal: NodeJS.Signals,
): void {
  sendSignal(-group.pgid, signal)
  for (const member of members) {
    if (member.pgrp !== group.pgid) sendSignal(member.pid, signal)
  }
}
