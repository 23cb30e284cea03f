import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { UnenforcedLimit } from '../../shared/contained-limits.js'
import { blockDeviceOf } from '../block-device.js'
import type { WorkloadSpec } from '../driver.js'
import {
  DEFAULT_DISK_WRITE_RULE,
  diskWriteRuleLimits,
  type DiskWriteRule,
} from '../workload-limits.js'
import {
  CGROUP_CONTROLLERS,
  chooseCgroupLayout,
  cgroupLimitsOf,
  groupDirs,
  limitsDiskWrites,
  oomKillsIn,
  V2_SERVER_LEAF,
  workloadCgroupPlan,
  type CgroupDiskWrite,
  type CgroupLayout,
  type WorkloadCgroupPlan,
} from './cgroup-plan.js'

/**
 * What writes a workload's cgroup (cgroup-plan.ts says where and what): made before its first
 * process starts, read for OOM kills when it ends, removed with it.
 */
export type CgroupSetup =
  | {
      ok: true
      layout: CgroupLayout
      stateDir: string
      /** The disk workloads' writes are limited on, or why they are not. */
      diskWrite: { ok: true; disk: CgroupDiskWrite } | { ok: false; reason: string }
    }
  | { ok: false; reason: string }

/** How long the processes left in an ended workload's cgroup may take to die. */
const EMPTY_WAIT_MS = 2000

async function readOr(file: string, fallback: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => fallback)
}

/** The limits a host without a usable cgroup leaves unenforced, with why. */
export function unenforcedWithout(reason: string): UnenforcedLimit[] {
  return (['memory', 'cpu', 'pids', 'diskWrite'] as const).map((limit) => ({
    limit,
    reason: `no writable cgroup for workloads: ${reason}`,
  }))
}

/** The limits the setup leaves unenforced: the disk writes where it cannot limit them. */
export function unenforcedBy(setup: CgroupSetup): UnenforcedLimit[] {
  if (!setup.ok) return unenforcedWithout(setup.reason)
  return setup.diskWrite.ok ? [] : [{ limit: 'diskWrite', reason: setup.diskWrite.reason }]
}

/**
 * v2: the subtree under the server's own cgroup made usable: its processes moved into a leaf
 * and the three controllers (and io, where there is one) enabled for its children and the
 * workloads' group.
 */
async function delegateV2(layout: Extract<CgroupLayout, { version: 2 }>, groupDir: string) {
  const ownDir = layout.ownDir
  const controllers = [...CGROUP_CONTROLLERS, ...(layout.io ? ['io'] : [])]
  const enable = controllers.map((c) => `+${c}`).join(' ')
  const subtree = await readOr(path.join(ownDir, 'cgroup.subtree_control'), '')
  // The root cgroup (no cgroup.type) may hold processes and enable controllers both.
  const isRoot = (await readOr(path.join(ownDir, 'cgroup.type'), '')) === ''
  if (!isRoot && !controllers.every((c) => subtree.split(/\s+/).includes(c))) {
    const leaf = path.join(ownDir, V2_SERVER_LEAF)
    await mkdir(leaf, { recursive: true })
    for (const pid of (await readOr(path.join(ownDir, 'cgroup.procs'), '')).split('\n')) {
      if (pid === '') continue
      // One may have ended meanwhile.
      await writeFile(path.join(leaf, 'cgroup.procs'), pid).catch(() => undefined)
    }
  }
  if (!controllers.every((c) => subtree.split(/\s+/).includes(c))) {
    await writeFile(path.join(ownDir, 'cgroup.subtree_control'), enable)
  }
  await mkdir(groupDir, { recursive: true })
  await writeFile(path.join(groupDir, 'cgroup.subtree_control'), enable)
}

/**
 * Whether workloads can get cgroups here, tried for real: the layout, the workloads' group
 * made (delegated on v2), and a trial cgroup with limits made and removed. Empty cgroups of
 * workloads an earlier server left (it stopped before they ended) are removed.
 */
export async function probeCgroups(
  stateDir: string,
  diskWriteRule: DiskWriteRule = DEFAULT_DISK_WRITE_RULE,
): Promise<CgroupSetup> {
  if (process.getuid?.() !== 0)
    return { ok: false, reason: 'cgroups need the server to run as root' }
  const procSelf = await readOr('/proc/self/cgroup', '')
  const mountinfo = await readOr('/proc/self/mountinfo', '')
  const own = /^0::(.*)$/m.exec(procSelf)?.[1]
  const unified = mountinfo.split('\n').find((l) => l.includes(' - cgroup2 '))
  let v2Controllers: string | undefined
  if (own !== undefined && unified) {
    const choice = chooseCgroupLayout(mountinfo, procSelf, 'memory pids cpu')
    if (choice.ok && choice.layout.version === 2) {
      v2Controllers = await readOr(path.join(choice.layout.ownDir, 'cgroup.controllers'), '')
    }
  }
  const choice = chooseCgroupLayout(mountinfo, procSelf, v2Controllers)
  if (!choice.ok) return choice
  const setup: Extract<CgroupSetup, { ok: true }> = {
    ok: true,
    layout: choice.layout,
    stateDir,
    diskWrite: await diskWriteSetup(choice.layout, stateDir, diskWriteRule),
  }
  try {
    if (choice.layout.version === 2) {
      await delegateV2(choice.layout, groupDirs(choice.layout, stateDir)[0]!)
    }
    for (const dir of groupDirs(choice.layout, stateDir)) {
      await removeEmptyGroups(path.dirname(dir))
      await mkdir(dir, { recursive: true })
      await removeEmptyChildren(dir)
    }
    const probe = { id: `probe-${process.pid}`, vcpus: 1, memoryGb: 1 }
    const trial = await openWorkloadCgroup(
      { ...setup, diskWrite: { ok: false, reason: '' } },
      probe,
    )
    await removeCgroupDirs(trial)
    if (setup.diskWrite.ok) {
      // A kernel may refuse the disk's limit alone: the other limits hold all the same.
      try {
        await removeCgroupDirs(await openWorkloadCgroup(setup, probe))
      } catch (error) {
        setup.diskWrite = { ok: false, reason: (error as Error).message }
        await removeCgroupDirs(trial).catch(() => undefined)
      }
    }
    return setup
  } catch (error) {
    return { ok: false, reason: (error as Error).message }
  }
}

/** The disk of the state directory (where workloads' disks are) and the rule, or why none. */
async function diskWriteSetup(
  layout: CgroupLayout,
  stateDir: string,
  rule: DiskWriteRule,
): Promise<Extract<CgroupSetup, { ok: true }>['diskWrite']> {
  if (!diskWriteRuleLimits(rule))
    return {
      ok: false,
      reason: 'containment.diskWrite is 0 for both bandwidth and operations (docs/security.md)',
    }
  if (!limitsDiskWrites(layout))
    return {
      ok: false,
      reason:
        layout.version === 2
          ? "the server's cgroup v2 has no io controller"
          : 'no cgroup v1 hierarchy has the blkio controller',
    }
  await mkdir(stateDir, { recursive: true })
  const disk = await blockDeviceOf(stateDir)
  if (!disk.ok)
    return {
      ok: false,
      reason: `the data directory is on no disk a write limit can be set on: ${disk.reason}`,
    }
  return { ok: true, disk: { majorMinor: disk.majorMinor, rule } }
}

/**
 * Removes other drivers' groups of workloads that are empty (a server whose state directory
 * was temporary, or that has nothing running: it makes its group again at its next start). The
 * kernel refuses to remove one with a cgroup or a process in it.
 */
async function removeEmptyGroups(parent: string): Promise<void> {
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    if (/^podyard-[0-9a-f]{16}$/.test(name))
      await rmdir(path.join(parent, name)).catch(() => undefined)
  }
}

/** Removes the cgroups in `dir` that hold no process (their workloads ended). */
async function removeEmptyChildren(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true })
  for (const entry of entries) {
    if (!entry.isDirectory()) continue
    const child = path.join(dir, entry.name)
    if ((await readOr(path.join(child, 'cgroup.procs'), 'x')).trim() === '') {
      await rmdir(child).catch(() => undefined)
    }
  }
}

/** Makes a workload's cgroup afresh with its limits; its launch joins it (launchInCgroup). */
export async function openWorkloadCgroup(
  setup: Extract<CgroupSetup, { ok: true }>,
  spec: Pick<WorkloadSpec, 'id' | 'vcpus' | 'memoryGb'>,
): Promise<WorkloadCgroupPlan> {
  const limits = cgroupLimitsOf(spec, setup.diskWrite.ok ? setup.diskWrite.disk : undefined)
  const plan = workloadCgroupPlan(setup.layout, setup.stateDir, spec.id, limits)
  // A cgroup of an earlier run counts that run's OOM kills: removed first.
  await removeCgroupDirs(plan)
  if (setup.layout.version === 2) {
    // Another server may have removed the group while it was empty.
    await delegateV2(setup.layout, groupDirs(setup.layout, setup.stateDir)[0]!)
  }
  for (const dir of plan.dirs) await mkdir(dir, { recursive: true })
  for (const write of plan.writes) {
    try {
      await writeFile(write.file, write.value)
    } catch (error) {
      if (!(write.optional && (error as NodeJS.ErrnoException).code === 'ENOENT')) {
        throw new Error(
          `cgroup: writing ${write.value} to ${write.file}: ${(error as Error).message}`,
        )
      }
    }
  }
  return plan
}

/** The OOM kills the kernel counted in the workload's cgroup (0 once it is removed). */
export async function oomKillsOf(plan: WorkloadCgroupPlan): Promise<number> {
  return oomKillsIn(await readOr(plan.oomFile, ''))
}

/**
 * Removes a workload's cgroup: what is left in it (a process its leader left behind) is killed
 * first, since a cgroup with processes cannot be removed.
 */
export async function removeCgroupDirs(plan: WorkloadCgroupPlan): Promise<void> {
  for (const dir of [...plan.dirs].reverse()) {
    const deadline = Date.now() + EMPTY_WAIT_MS
    for (;;) {
      const pids = (await readOr(path.join(dir, 'cgroup.procs'), ''))
        .split('\n')
        .filter((p) => p !== '')
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL')
        } catch {
          // gone meanwhile
        }
      }
      try {
        await rmdir(dir)
        break
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT') break
        if (code !== 'EBUSY' || Date.now() > deadline) throw error
        await sleep(20)
      }
    }
  }
}

/** A workload's cgroup by its id alone (where it is; the limits do not matter to find it). */
function cgroupOf(setup: Extract<CgroupSetup, { ok: true }>, id: string): WorkloadCgroupPlan {
  return workloadCgroupPlan(
    setup.layout,
    setup.stateDir,
    id,
    cgroupLimitsOf({ vcpus: 1, memoryGb: 1 }),
  )
}

/**
 * The end of a workload's cgroup: the kernel's OOM kills in it noted in `marker` (a file that
 * outlives the cgroup, read by ranOutOfMemory), then the cgroup removed. Nothing without one.
 */
export async function releaseWorkloadCgroup(setup: CgroupSetup, id: string, marker: string) {
  if (!setup.ok) return
  const plan = cgroupOf(setup, id)
  if ((await oomKillsOf(plan)) > 0) await writeFile(marker, 'oom_kill\n')
  await removeCgroupDirs(plan)
}

/** Whether the kernel killed a process of the workload for its memory limit in its last run. */
export async function ranOutOfMemory(setup: CgroupSetup, id: string, marker: string) {
  if ((await readOr(marker, '')) !== '') return true
  return setup.ok && (await oomKillsOf(cgroupOf(setup, id))) > 0
}
