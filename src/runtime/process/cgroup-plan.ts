import { createHash } from 'node:crypto'
import path from 'node:path'
import type { WorkloadSpec } from '../driver.js'
import { diskWriteLimitsOf, pidsLimitOf, type DiskWriteRule } from '../workload-limits.js'

/**
 * Where and how a workload of the process driver is held to what it rented (docs/runtime.md,
 * "Limits"): pure functions from what the host's /proc says to the directories and values the
 * driver writes (cgroup-files.ts writes them).
 *
 * cgroup v2 where the host's unified hierarchy has the memory, pids and cpu controllers: a
 * subtree under the server's own cgroup (the server moves itself into a leaf of it, as the
 * "no processes in an inner cgroup" rule asks). cgroup v1 otherwise, where those three
 * controllers are mounted as v1 hierarchies (a hybrid layout: systemd's, and containers' on
 * older engines): a directory under the server's own cgroup in each of them.
 */
export const CGROUP_CONTROLLERS = ['memory', 'pids', 'cpu'] as const
export type CgroupController = (typeof CGROUP_CONTROLLERS)[number]

/** The CFS period the vCPU quota is a share of (the kernel's default). */
export const CPU_PERIOD_US = 100_000
const GIB = 1024 ** 3

/** A cgroup mount of /proc/self/mountinfo. */
export interface CgroupMount {
  mountPoint: string
  /** The path of the hierarchy shown at mountPoint (not `/` inside a cgroup namespace). */
  root: string
  version: 1 | 2
  /** v1: the controllers of the hierarchy (from its super options). */
  controllers: string[]
}

export type CgroupLayout =
  | {
      version: 2
      /** The server's own cgroup, as a directory. */
      ownDir: string
      /** It has the io controller too: workloads' disk writes can be limited (io.max). */
      io?: true
    }
  | {
      version: 1
      /** Per controller, the server's own cgroup in that hierarchy, as a directory. */
      ownDirs: Record<CgroupController, string>
      /** The server's own cgroup in the blkio hierarchy, where there is one (write limits). */
      blkioDir?: string
    }

export type CgroupLayoutChoice = { ok: true; layout: CgroupLayout } | { ok: false; reason: string }

/** The cgroup mounts of a mountinfo text. */
export function parseCgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = []
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ')
    if (!left || !right) continue
    const fields = left.split(' ')
    const [fstype, , superOptions = ''] = right.split(' ')
    if (fstype !== 'cgroup' && fstype !== 'cgroup2') continue
    mounts.push({
      mountPoint: unescapeMountPath(fields[4] ?? ''),
      root: unescapeMountPath(fields[3] ?? '/'),
      version: fstype === 'cgroup2' ? 2 : 1,
      controllers:
        fstype === 'cgroup' ? superOptions.split(',').filter((o) => !o.includes('=')) : [],
    })
  }
  return mounts
}

function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(parseInt(octal, 8)),
  )
}

/** /proc/self/cgroup: the v2 path (hierarchy 0) and each v1 controller's path. */
export function parseProcCgroup(text: string): { v2?: string; v1: Map<string, string> } {
  const v1 = new Map<string, string>()
  let v2: string | undefined
  for (const line of text.split('\n')) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim())
    if (!match) continue
    if (match[1] === '0' && match[2] === '') v2 = match[3]!
    else for (const controller of match[2]!.split(',')) v1.set(controller, match[3]!)
  }
  return v2 === undefined ? { v1 } : { v2, v1 }
}

/** The directory of cgroup `cgroupPath` under a mount whose root is `mount.root`. */
function dirUnder(mount: CgroupMount, cgroupPath: string): string | undefined {
  const root = mount.root === '/' ? '' : mount.root
  if (root !== '' && cgroupPath !== root && !cgroupPath.startsWith(`${root}/`)) return undefined
  const dir = path.posix.join(mount.mountPoint, cgroupPath.slice(root.length) || '/')
  return dir.length > 1 ? dir.replace(/\/$/, '') : dir
}

/**
 * The layout workloads get here. `v2Controllers`: the controllers the server's own v2 cgroup
 * has (its cgroup.controllers), when there is a unified hierarchy.
 */
export function chooseCgroupLayout(
  mountinfo: string,
  procSelfCgroup: string,
  v2Controllers: string | undefined,
): CgroupLayoutChoice {
  const mounts = parseCgroupMounts(mountinfo)
  const own = parseProcCgroup(procSelfCgroup)
  const unified = mounts.find((m) => m.version === 2)
  const available = (v2Controllers ?? '').split(/\s+/)
  if (unified && own.v2 !== undefined && CGROUP_CONTROLLERS.every((c) => available.includes(c))) {
    const ownDir = dirUnder(unified, own.v2)
    if (ownDir)
      return {
        ok: true,
        layout: { version: 2, ownDir, ...(available.includes('io') ? { io: true } : {}) },
      }
  }
  const ownDirs: Partial<Record<CgroupController, string>> = {}
  const missing: string[] = []
  for (const controller of CGROUP_CONTROLLERS) {
    const mount = mounts.find((m) => m.version === 1 && m.controllers.includes(controller))
    const cgroupPath = own.v1.get(controller)
    const dir = mount && cgroupPath !== undefined ? dirUnder(mount, cgroupPath) : undefined
    if (dir) ownDirs[controller] = dir
    else missing.push(controller)
  }
  if (missing.length === 0) {
    const blkioMount = mounts.find((m) => m.version === 1 && m.controllers.includes('blkio'))
    const blkioPath = own.v1.get('blkio')
    const blkioDir =
      blkioMount && blkioPath !== undefined ? dirUnder(blkioMount, blkioPath) : undefined
    return {
      ok: true,
      layout: {
        version: 1,
        ownDirs: ownDirs as Record<CgroupController, string>,
        ...(blkioDir ? { blkioDir } : {}),
      },
    }
  }
  return {
    ok: false,
    reason: unified
      ? `the server's cgroup v2 has no ${CGROUP_CONTROLLERS.filter((c) => !available.includes(c)).join(', ')} controller, and no cgroup v1 hierarchy has ${missing.join(', ')}`
      : `no cgroup hierarchy has the ${missing.join(', ')} controller`,
  }
}

/** The name of this driver's group of workloads: distinct per state directory. */
export function workloadsGroupName(stateDir: string): string {
  return `podyard-${createHash('sha256').update(stateDir).digest('hex').slice(0, 16)}`
}

/** The leaf a v2 server moves its own processes into (inner cgroups may hold none). */
export const V2_SERVER_LEAF = 'podyard-server'

/** The directories of this driver's group of workloads (one per hierarchy). */
export function groupDirs(layout: CgroupLayout, stateDir: string): string[] {
  const group = workloadsGroupName(stateDir)
  if (layout.version === 2) return [path.posix.join(layout.ownDir, group)]
  return v1OwnDirs(layout).map((dir) => path.posix.join(dir, group))
}

/** The server's own cgroup in each v1 hierarchy workloads join: blkio's last, where there is one. */
function v1OwnDirs(layout: Extract<CgroupLayout, { version: 1 }>): string[] {
  return [
    ...CGROUP_CONTROLLERS.map((c) => layout.ownDirs[c]),
    ...(layout.blkioDir ? [layout.blkioDir] : []),
  ]
}

/** Whether workloads' disk writes can be limited in this layout (io on v2, blkio on v1). */
export function limitsDiskWrites(layout: CgroupLayout): boolean {
  return layout.version === 2 ? layout.io === true : layout.blkioDir !== undefined
}

/** The limits of a workload, from what it rented. */
export interface CgroupLimits {
  /** Bytes of memory (and no swap beyond it); null: not limited (it rented none). */
  memoryBytes: number | null
  /** Microseconds of CPU per CPU_PERIOD_US; null: not limited. */
  cpuQuotaUs: number | null
  pids: number
  /** Writes to one disk (`major:minor`) per second; a rate of 0 is no limit. Absent: none. */
  diskWrite?: { majorMinor: string; bytesPerSecond: number; iops: number }
}

/** The disk workloads' writes are limited on, and the rule, where they can be. */
export interface CgroupDiskWrite {
  majorMinor: string
  rule: DiskWriteRule
}

export function cgroupLimitsOf(
  spec: Pick<WorkloadSpec, 'vcpus' | 'memoryGb'>,
  diskWrite?: CgroupDiskWrite,
): CgroupLimits {
  return {
    memoryBytes: spec.memoryGb > 0 ? Math.round(spec.memoryGb * GIB) : null,
    // The kernel's floor is 1 ms per period.
    cpuQuotaUs: spec.vcpus > 0 ? Math.max(1000, Math.round(spec.vcpus * CPU_PERIOD_US)) : null,
    pids: pidsLimitOf(spec.vcpus),
    ...(diskWrite
      ? {
          diskWrite: {
            majorMinor: diskWrite.majorMinor,
            ...diskWriteLimitsOf(spec.vcpus, diskWrite.rule),
          },
        }
      : {}),
  }
}

export interface CgroupFileWrite {
  file: string
  value: string
  /** Absent on some kernels (swap accounting off): skipped there. */
  optional?: boolean
}

/** A workload's cgroup: its directories, the files that set its limits, where it joins. */
export interface WorkloadCgroupPlan {
  version: 1 | 2
  /** Created in this order, removed in the reverse. */
  dirs: string[]
  writes: CgroupFileWrite[]
  /** The cgroup.procs files its first process writes its pid to before it execs. */
  procsFiles: string[]
  /** Where the kernel counts OOM kills: `oom_kill N` lines. */
  oomFile: string
}

export function workloadCgroupPlan(
  layout: CgroupLayout,
  stateDir: string,
  id: string,
  limits: CgroupLimits,
): WorkloadCgroupPlan {
  const group = workloadsGroupName(stateDir)
  if (layout.version === 2) {
    const dir = path.posix.join(layout.ownDir, group, id)
    const at = (name: string) => path.posix.join(dir, name)
    return {
      version: 2,
      dirs: [dir],
      writes: [
        {
          file: at('memory.max'),
          value: limits.memoryBytes === null ? 'max' : `${limits.memoryBytes}`,
        },
        {
          file: at('memory.swap.max'),
          value: limits.memoryBytes === null ? 'max' : '0',
          optional: true,
        },
        { file: at('pids.max'), value: `${limits.pids}` },
        {
          file: at('cpu.max'),
          value: `${limits.cpuQuotaUs === null ? 'max' : limits.cpuQuotaUs} ${CPU_PERIOD_US}`,
        },
        ...(limits.diskWrite
          ? [
              {
                file: at('io.max'),
                value: `${limits.diskWrite.majorMinor} wbps=${limits.diskWrite.bytesPerSecond || 'max'} wiops=${limits.diskWrite.iops || 'max'}`,
              },
            ]
          : []),
      ],
      procsFiles: [at('cgroup.procs')],
      oomFile: at('memory.events'),
    }
  }
  const dirOf = (c: CgroupController) => path.posix.join(layout.ownDirs[c], group, id)
  const memory = limits.memoryBytes === null ? '-1' : `${limits.memoryBytes}`
  const blkio = layout.blkioDir ? path.posix.join(layout.blkioDir, group, id) : undefined
  // v1 takes one rule per write; 0 removes a device's rule, and there is none in a new cgroup.
  const throttles =
    blkio && limits.diskWrite
      ? [
          ['blkio.throttle.write_bps_device', limits.diskWrite.bytesPerSecond],
          ['blkio.throttle.write_iops_device', limits.diskWrite.iops],
        ]
          .filter(([, rate]) => Number(rate) > 0)
          .map(([file, rate]) => ({
            file: path.posix.join(blkio, String(file)),
            value: `${limits.diskWrite!.majorMinor} ${rate}`,
          }))
      : []
  return {
    version: 1,
    dirs: [...CGROUP_CONTROLLERS.map(dirOf), ...(blkio ? [blkio] : [])],
    writes: [
      { file: path.posix.join(dirOf('memory'), 'memory.limit_in_bytes'), value: memory },
      // No swap beyond it (memsw counts memory and swap together; set after the memory limit).
      {
        file: path.posix.join(dirOf('memory'), 'memory.memsw.limit_in_bytes'),
        value: memory,
        optional: true,
      },
      { file: path.posix.join(dirOf('pids'), 'pids.max'), value: `${limits.pids}` },
      { file: path.posix.join(dirOf('cpu'), 'cpu.cfs_period_us'), value: `${CPU_PERIOD_US}` },
      {
        file: path.posix.join(dirOf('cpu'), 'cpu.cfs_quota_us'),
        value: limits.cpuQuotaUs === null ? '-1' : `${limits.cpuQuotaUs}`,
      },
      ...throttles,
    ],
    procsFiles: [
      ...CGROUP_CONTROLLERS.map((c) => path.posix.join(dirOf(c), 'cgroup.procs')),
      ...(blkio ? [path.posix.join(blkio, 'cgroup.procs')] : []),
    ],
    oomFile: path.posix.join(dirOf('memory'), 'memory.oom_control'),
  }
}

/** The OOM kills in an `oom_kill N` line of memory.events (v2) or memory.oom_control (v1). */
export function oomKillsIn(text: string): number {
  const match = /^oom_kill (\d+)$/m.exec(text)
  return match ? Number(match[1]) : 0
}

/**
 * The launch that first joins the workload's cgroup (every hierarchy), then execs the command:
 * its first process is in the cgroup before it can fork, so nothing it starts escapes.
 */
export function launchInCgroup<L extends { file: string; args: string[] }>(
  launch: L,
  procsFiles: string[],
): L {
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`
  const joins = procsFiles.map((f) => `echo $$ > ${quote(f)}`).join(' && ')
  return {
    ...launch,
    file: '/bin/sh',
    args: ['-c', `${joins} && exec "$@"`, 'sh', launch.file, ...launch.args],
  }
}
