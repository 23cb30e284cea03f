import type { WorkloadSpec } from '../driver.js'

/**
 * The spec as state.json keeps it: without its environment (worker keys and a pod's own
 * secrets are there) and registry credentials. Nothing read back from the file needs them: a
 * running workload has its environment, and a workload is only ever started again from a new
 * spec.
 */
export type PersistedSpec = Omit<WorkloadSpec, 'env' | 'registryAuth'>

export function persistedSpecOf(spec: WorkloadSpec): PersistedSpec {
  const { env: _env, registryAuth: _credentials, ...persisted } = spec
  return persisted
}

/** How a workload was started; persisted as `<stateDir>/<id>/state.json`. */
export interface WorkloadRecord {
  spec: PersistedSpec
  /** The group leader: the exit-status wrapper shell. */
  pid: number
  pgid: number
  /** Field 22 of /proc/<pid>/stat at start; tells our leader from a process re-using its pid. */
  processStartTicks: number | null
  /** /proc/sys/kernel/random/boot_id at start; start ticks only mean something within a boot. */
  bootId: string
  sandbox: 'none' | 'bubblewrap'
  /** Who a sandboxed workload runs as (its tenant's uid when the server is root). */
  user?: { uid: number; gid: number }
  startedAt: string
  /** When the driver learnt that it ended (or the exit-status file's time). */
  stoppedAt?: string
}

/**
 * Ids become directory names under the state dir, so they must not be able to climb out of it
 * (`..`, `/`) or hide (a leading dot).
 */
const WORKLOAD_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

export function isValidWorkloadId(id: string): boolean {
  return WORKLOAD_ID.test(id)
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A state.json text as a record; undefined when it is not one (a foreign or broken file). */
export function parseWorkloadRecord(text: string): WorkloadRecord | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isObject(value) || !isObject(value.spec)) return undefined
  const spec = value.spec
  const ticks = value.processStartTicks
  if (
    typeof spec.id !== 'string' ||
    typeof spec.containerDiskPath !== 'string' ||
    !Array.isArray(spec.mounts) ||
    !isObject(spec.labels) ||
    !Number.isInteger(value.pid) ||
    !Number.isInteger(value.pgid) ||
    !(ticks === null || Number.isInteger(ticks)) ||
    typeof value.startedAt !== 'string' ||
    !(value.stoppedAt === undefined || typeof value.stoppedAt === 'string')
  ) {
    return undefined
  }
  const user = value.user
  const validUser =
    isObject(user) && Number.isInteger(user.uid) && Number.isInteger(user.gid)
      ? { user: { uid: user.uid as number, gid: user.gid as number } }
      : {}
  // A state.json written before env was left out still has it: it is not read back.
  const { env: _env, ...persisted } = spec
  return {
    spec: persisted as unknown as PersistedSpec,
    pid: value.pid as number,
    pgid: value.pgid as number,
    processStartTicks: ticks as number | null,
    bootId: typeof value.bootId === 'string' ? value.bootId : '',
    sandbox: value.sandbox === 'bubblewrap' ? 'bubblewrap' : 'none',
    ...validUser,
    startedAt: value.startedAt,
    ...(value.stoppedAt === undefined ? {} : { stoppedAt: value.stoppedAt as string }),
  }
}

/** The exit code in an exit-status file's text; null when absent or not a number. */
export function parseExitStatus(text: string | undefined): number | null {
  if (text === undefined) return null
  const trimmed = text.trim()
  return /^\d+$/.test(trimmed) ? Number(trimmed) : null
}
