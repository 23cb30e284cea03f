import type { UnenforcedLimit } from '../../shared/contained-limits.js'

/**
 * Which of a workload's limits a Docker engine enforces (docs/runtime.md, "Limits"), from what
 * it says of itself (GET /info) and from one trial of a container disk size. Pure; the driver
 * (engine-limits.ts) does the calls.
 */

/** The parts of GET /info that podyard reads. */
export interface EngineInfo {
  ID?: string
  Name?: string
  NCPU?: number
  MemTotal?: number
  ServerVersion?: string
  Runtimes?: Record<string, unknown>
  /** The storage driver (overlay2, btrfs, zfs, devicemapper, vfs, ...). */
  Driver?: string
  /** The storage driver's details: [["Backing Filesystem", "extfs"], ...]. */
  DriverStatus?: Array<[string, string]> | null
  MemoryLimit?: boolean
  CpuCfsQuota?: boolean
  PidsLimit?: boolean
  CgroupVersion?: string
  /** Where the engine stores images and containers (its data root). */
  DockerRootDir?: string
}

/**
 * What creating a container with a writable layer size (StorageOpt.size) told: the storage
 * driver takes it, refuses it (in the engine's words), or the trial failed for another reason
 * (nothing is known; tried again later).
 */
export type DiskQuotaTrial =
  | { outcome: 'enforced' }
  | { outcome: 'refused'; message: string }
  | { outcome: 'unknown'; message: string }

/**
 * The size every trial asks for: the smallest container disk a pod may rent (1 GB), so that
 * a driver with a floor (devicemapper refuses sizes below its base size, 10 GB by default)
 * is found out rather than failing the pods below its floor.
 */
export const DISK_TRIAL_SIZE = '1G'

/** `overlay2 on extfs`: the storage driver and the filesystem under it, for reasons. */
export function storageDriverOf(info: EngineInfo): string {
  const driver = info.Driver || 'unknown'
  const backing = info.DriverStatus?.find(([key]) => key === 'Backing Filesystem')?.[1]
  return backing ? `${driver} on ${backing}` : driver
}

/**
 * The trial's outcome from the error of the create (undefined: it was created). Only an answer
 * about the storage option is an answer; anything else (the engine busy, the trial image gone)
 * leaves it unknown.
 */
export function diskQuotaTrialOf(error: unknown): DiskQuotaTrial {
  if (error === undefined) return { outcome: 'enforced' }
  const message = ((error as Error | null)?.message ?? String(error))
    .replace(/^\(HTTP code \d+\)\s*[a-z ]*-\s*/i, '')
    .trim()
  return /storage.?opt|quota|size/i.test(message)
    ? { outcome: 'refused', message }
    : { outcome: 'unknown', message }
}

/** Whether a trial's outcome may be kept (until the engine changes): all but `unknown`. */
export function isSettled(trial: DiskQuotaTrial): boolean {
  return trial.outcome !== 'unknown'
}

const HOW_TO_LIMIT_DISK =
  'sizes are enforced by overlay2 on xfs mounted with pquota, btrfs and zfs (docs/runtime.md)'

/** The limits the engine does not enforce, each with why; empty when it enforces them all. */
export function unenforcedLimitsOf(info: EngineInfo, disk: DiskQuotaTrial): UnenforcedLimit[] {
  const out: UnenforcedLimit[] = []
  // Older engines leave a field out; only `true` means the kernel has the controller.
  if (info.MemoryLimit !== true)
    out.push({
      limit: 'memory',
      reason: 'the engine cannot limit memory (docker info: MemoryLimit is not true)',
    })
  if (info.CpuCfsQuota !== true)
    out.push({
      limit: 'cpu',
      reason: 'the engine cannot set a CPU quota (docker info: CpuCfsQuota is not true)',
    })
  if (info.PidsLimit !== true)
    out.push({
      limit: 'pids',
      reason: 'the engine cannot limit processes (docker info: PidsLimit is not true)',
    })
  const storage = storageDriverOf(info)
  if (disk.outcome === 'refused')
    out.push({
      limit: 'disk',
      reason: `the storage driver ${storage} does not enforce a container disk size (the engine says: ${disk.message}); ${HOW_TO_LIMIT_DISK}`,
    })
  else if (disk.outcome === 'unknown')
    out.push({
      limit: 'disk',
      reason: `could not find out whether the storage driver ${storage} enforces a container disk size (${disk.message}); tried again within a minute`,
    })
  return out
}

/**
 * What the engine's answer depends on: its identity, version, storage driver and cgroups. A
 * kept answer stands while this stays the same (an engine restarted with another storage
 * driver is tried again).
 */
export function containmentKey(info: EngineInfo): string {
  return JSON.stringify([
    info.ID ?? '',
    info.ServerVersion ?? '',
    storageDriverOf(info),
    info.CgroupVersion ?? '',
    info.MemoryLimit === true,
    info.CpuCfsQuota === true,
    info.PidsLimit === true,
    info.DockerRootDir ?? '',
  ])
}

/**
 * What a container's disk write limits (BlkioDeviceWriteBps and BlkioDeviceWriteIOps on the
 * disk of the engine's data root) come to on an engine: the disk they are set on, or why none
 * is (the rule is off, the disk is not known, or the engine drops the limits).
 */
export type DiskWriteTrial =
  /** `declared`: the host's docker.dataDisk, not found on this machine. */
  | { outcome: 'enforced'; device: string; declared?: boolean }
  | { outcome: 'unenforced'; reason: string }
  | { outcome: 'unknown'; message: string }

/** The parts of a created container's HostConfig that say whether the engine kept the limits. */
export interface BlkioHostConfig {
  BlkioDeviceWriteBps?: Array<{ Path: string; Rate: number }> | null
  BlkioDeviceWriteIOps?: Array<{ Path: string; Rate: number }> | null
}

/**
 * The trial's outcome from the HostConfig of a container created with both limits on `device`:
 * an engine whose kernel cannot throttle block I/O (no blkio or io controller) creates the
 * container all the same, with a warning, and the limits dropped from it.
 */
export function diskWriteTrialOf(device: string, created: BlkioHostConfig): DiskWriteTrial {
  const kept = (list: BlkioHostConfig['BlkioDeviceWriteBps']) =>
    (list ?? []).some((entry) => entry.Path === device && entry.Rate > 0)
  if (kept(created.BlkioDeviceWriteBps) && kept(created.BlkioDeviceWriteIOps))
    return { outcome: 'enforced', device }
  return {
    outcome: 'unenforced',
    reason: `the engine drops block I/O write limits (its kernel has no blkio or io cgroup controller for containers, as docker info's warnings say); ${device} is the disk of its data root`,
  }
}

/** The limit the trial leaves unenforced, with why; empty where the engine enforces it. */
export function diskWriteUnenforced(trial: DiskWriteTrial): UnenforcedLimit[] {
  if (trial.outcome === 'enforced') return []
  return [
    {
      limit: 'diskWrite',
      reason:
        trial.outcome === 'unenforced'
          ? trial.reason
          : `could not find out whether the engine limits disk writes (${trial.message}); tried again within a minute`,
    },
  ]
}
