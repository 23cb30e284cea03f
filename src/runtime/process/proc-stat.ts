/**
 * Pure readings of /proc/<pid>/stat (proc(5)) and the usage figures derived from them. The I/O
 * that fetches the text lives in process-group.ts.
 */

/**
 * USER_HZ: the unit of utime, stime and starttime. It is part of the kernel's user-space ABI
 * and is 100 on every Linux architecture Node supports, whatever CONFIG_HZ is.
 */
export const CLOCK_TICKS_PER_SECOND = 100

export interface ProcStat {
  pid: number
  comm: string
  /** One letter: R running, S sleeping, D disk wait, Z zombie, T stopped, X dead, ... */
  state: string
  ppid: number
  pgrp: number
  session: number
  /** Clock ticks spent in user mode. */
  utime: number
  /** Clock ticks spent in kernel mode. */
  stime: number
  /** Clock ticks after boot at which the process started (field 22). */
  starttime: number
  /** Resident set size in pages (field 24). */
  rssPages: number
}

/** Parses one /proc/<pid>/stat line; undefined when the text is not one. */
export function parseProcStat(text: string): ProcStat | undefined {
  // comm is in parentheses and may itself contain spaces and parentheses, so the fields after
  // it start after the LAST closing parenthesis.
  const open = text.indexOf('(')
  const close = text.lastIndexOf(')')
  if (open < 0 || close < open) return undefined
  const pid = Number(text.slice(0, open).trim())
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/)
  // rest[0] is field 3 (state), so field n is rest[n - 3].
  const field = (n: number): number => Number(rest[n - 3])
  const stat: ProcStat = {
    pid,
    comm: text.slice(open + 1, close),
    state: rest[0] ?? '',
    ppid: field(4),
    pgrp: field(5),
    session: field(6),
    utime: field(14),
    stime: field(15),
    starttime: field(22),
    rssPages: field(24),
  }
  const numbers = [
    stat.pid,
    stat.ppid,
    stat.pgrp,
    stat.session,
    stat.utime,
    stat.stime,
    stat.starttime,
    stat.rssPages,
  ]
  if (stat.state === '' || !numbers.every(Number.isInteger)) return undefined
  return stat
}

/** A zombie (Z) or dead (X) entry has finished running; only its parent's wait() remains. */
export function isGone(stat: ProcStat): boolean {
  return stat.state === 'Z' || stat.state === 'X'
}

/** CPU ticks of a set of processes at one instant. */
export interface CpuSample {
  /** Wall time of the sample, ms (any monotonic origin, the same for both samples). */
  atMs: number
  /** utime + stime per process, keyed by `pid/starttime` so a re-used pid is another key. */
  ticks: Map<string, number>
}

export function cpuSample(atMs: number, stats: readonly ProcStat[]): CpuSample {
  return {
    atMs,
    ticks: new Map(stats.map((s) => [`${s.pid}/${s.starttime}`, s.utime + s.stime])),
  }
}

function clampPercent(value: number): number {
  if (!Number.isFinite(value) || value <= 0) return 0
  return Math.min(100, Math.round(value))
}

/**
 * CPU use between two samples as a percent of `vcpus` whole CPUs (100 = all busy). A process
 * that started between the samples counts all its ticks; one that ended in between is lost
 * (its ticks are no longer readable), so short-lived children are under-counted.
 */
export function cpuPercent(previous: CpuSample, next: CpuSample, vcpus: number): number {
  const wallSeconds = (next.atMs - previous.atMs) / 1000
  if (wallSeconds <= 0) return 0
  let ticks = 0
  for (const [key, value] of next.ticks) {
    ticks += Math.max(0, value - (previous.ticks.get(key) ?? 0))
  }
  const busySeconds = ticks / CLOCK_TICKS_PER_SECOND
  return clampPercent((busySeconds / (wallSeconds * Math.max(1, vcpus))) * 100)
}

/**
 * Resident memory as a percent of `memoryGb` GiB. Pages shared between the processes (the
 * same executable, fork copy-on-write) are counted once per process, so this over-estimates.
 */
export function memoryPercent(rssBytes: number, memoryGb: number): number {
  if (memoryGb <= 0) return 0
  return clampPercent((rssBytes / (memoryGb * 1024 ** 3)) * 100)
}

/** `KernelPageSize:` of the first mapping in a /proc/<pid>/smaps text, in bytes. */
export function parsePageSize(smaps: string): number | undefined {
  const match = /^KernelPageSize:\s+(\d+)\s+kB$/m.exec(smaps)
  return match ? Number(match[1]) * 1024 : undefined
}
