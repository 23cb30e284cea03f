import { readFileSync } from 'node:fs'
import { open, readdir, readFile } from 'node:fs/promises'
import { isGone, parsePageSize, parseProcStat, type ProcStat } from './proc-stat.js'

/** Thin /proc readers for the process driver. Linux only, like the driver. */

export async function readProcStat(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseProcStat(await readFile(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

/** Synchronous, for the moment right after spawn when no event may run in between. */
export function readProcStatSync(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
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
async function readProcessTable(): Promise<ProcStat[]> {
  let entries: string[]
  try {
    entries = await readdir('/proc')
  } catch {
    return []
  }
  const stats = await Promise.all(
    entries.filter((name) => /^\d+$/.test(name)).map((name) => readProcStat(Number(name))),
  )
  return stats.filter((s): s is ProcStat => s !== undefined)
}

/**
 * Reads of the process table shared by whoever asks while one runs: stopping or measuring a
 * hundred workloads at once costs a few reads of /proc, not one each (the machine's process
 * count times theirs).
 */
export class ProcessTable {
  private current: Promise<ProcStat[]> | undefined
  /** Reads of /proc made so far (each serves every caller of its time). */
  reads = 0

  read(): Promise<ProcStat[]> {
    if (!this.current) {
      this.reads += 1
      this.current = readProcessTable().finally(() => (this.current = undefined))
    }
    return this.current
  }
}

/**
 * The workload's live processes in a read of the process table: those in its process group
 * or its session (a shell with job control moves jobs to groups of their own, but they stay
 * in the session). A process that called setsid() itself escapes; only a cgroup or a PID
 * namespace would hold it.
 */
export function membersIn(table: readonly ProcStat[], group: GroupIdentity): ProcStat[] {
  // The kernel does not hand out a pid while it is some process's pgid or sid. So if a
  // process other than our leader now holds the leader's pid, the group has ended, and the
  // processes in a group of that number are a stranger's.
  const leader = table.find((s) => s.pid === group.pgid)
  if (leader !== undefined && leader.starttime !== group.leaderStartTicks) return []
  return table.filter((s) => !isGone(s) && (s.pgrp === group.pgid || s.session === group.pgid))
}

/** Every live process of the workload (membersIn, on a read of its own). */
export async function groupMembers(group: GroupIdentity): Promise<ProcStat[]> {
  return membersIn(await readProcessTable(), group)
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
