import { execFile } from 'node:child_process'
import {
  access,
  cp,
  mkdir,
  readdir,
  readFile,
  rm,
  rmdir,
  stat,
  truncate,
  writeFile,
} from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import type { UnenforcedLimit } from '../../shared/contained-limits.js'
import type { WorkloadSpec } from '../driver.js'
import { probeHostOnce, serverIdentity } from '../host-probes.js'
import {
  diskBoundPlans,
  imageOf,
  leftoversUnder,
  mkfsArgs,
  MOUNT_OPTIONS,
  parseLoopDevices,
  lastMountAt,
  parseMountInfo,
  type DiskBoundPlan,
} from './disk-bound-plan.js'
import { paceLoopWrites, unpaceLoopWrites } from './loop-writeback.js'

const run = promisify(execFile)

/** `auto`: bound disks with loop-mounted images where the host allows it; `none`: never. */
export type DiskBoundMode = 'auto' | 'none'

/** Where the tools live on Debian-like hosts, whose non-login PATH may lack the sbin dirs. */
const TOOL_DIRS = ['/usr/sbin', '/sbin', '/usr/bin', '/bin']
const PROBE_IMAGE_BYTES = 16 * 1024 * 1024

interface Tools {
  mkfs: string
  mount: string
  umount: string
  losetup: string
  resize2fs: string
  e2fsck: string
}

async function findTool(name: string, searchPath: string | undefined): Promise<string | null> {
  const dirs = [...(searchPath ?? '').split(':').filter(Boolean), ...TOOL_DIRS]
  for (const dir of dirs) {
    const candidate = path.join(dir, name)
    if (
      await access(candidate).then(
        () => true,
        () => false,
      )
    )
      return candidate
  }
  return null
}

function messageOf(error: unknown): string {
  const stderr = (error as { stderr?: string }).stderr?.trim()
  return stderr || (error as Error).message
}

/**
 * Bounds the disks of the process driver's workloads, and the network volumes of this machine's
 * docker driver's (docker/volume-bounds.ts), (disk-bound-plan.ts): each bounded
 * directory is a mount point of its own ext4 image. The mounts live in the host's mount
 * namespace, so they outlive the server like the workloads do: a new server finds them mounted
 * and uses them (adoption), and `sweep` removes those no workload claims any more (a crash).
 */
export class DiskBounds {
  private readonly mode: DiskBoundMode
  /** Images are only swept under this directory (the server's data directory). */
  private readonly root: string
  /** Where the trial image is made. */
  private readonly probeDir: string
  private probing: Promise<{ tools: Tools } | { reason: string }> | undefined
  /** Network volumes being mounted, by mount point: two starts never mount one twice. */
  private readonly sharing = new Map<string, Promise<unknown>>()
  /** The workloads this server started on each network volume (by mount point). */
  private readonly sharedUsers = new Map<string, Set<string>>()
  /** Other drivers' mount points on this machine (claimAlso). */
  private readonly otherClaims: Array<(except?: string) => Promise<Iterable<string>>> = []

  constructor(options: { mode: DiskBoundMode; root: string; probeDir: string }) {
    this.mode = options.mode
    this.root = path.resolve(options.root)
    this.probeDir = options.probeDir
  }

  /**
   * The workloads of a driver sharing these bounds (the docker driver's containers and the
   * directories they bind; the process driver's workloads): what `claims` names, for every
   * workload but `except`, is never unmounted by a sweep or a release. It also holds across a
   * server restart, when no workload is known as a user of its volume yet.
   */
  claimAlso(claims: (except?: string) => Promise<Iterable<string>>): void {
    this.otherClaims.push(claims)
  }

  /** What the other drivers claim; undefined when one of them cannot say (nothing is swept). */
  private async claimedElsewhere(except?: string): Promise<Set<string> | undefined> {
    const claimed = new Set<string>()
    try {
      for (const claims of this.otherClaims) {
        for (const mountPoint of await claims(except)) claimed.add(path.resolve(mountPoint))
      }
    } catch {
      return undefined
    }
    return claimed
  }

  /**
   * The limits left unenforced when disks are not bounded here, with why: `disk` (container
   * disks) and `volume` (network volumes on this machine's storage), bounded by the same means.
   */
  async unenforced(): Promise<UnenforcedLimit[]> {
    const probe = await this.probe()
    if (!('reason' in probe)) return []
    return [
      { limit: 'disk', reason: probe.reason },
      { limit: 'volume', reason: probe.reason },
    ]
  }

  /** Whether this host bounds disks: decided once, on first use (a success once per process). */
  private probe(): Promise<{ tools: Tools } | { reason: string }> {
    this.probing ??= probeHostOnce(
      `disk bounds ${serverIdentity()} ${this.mode} ${process.env.PATH}`,
      () => this.probeNow(),
      (answer) => 'tools' in answer,
    )
    return this.probing
  }

  private async probeNow(): Promise<{ tools: Tools } | { reason: string }> {
    if (this.mode === 'none') return { reason: 'containment.processDisk is none' }
    if (process.getuid?.() !== 0) {
      return { reason: 'the server is not root (mounting a disk image needs it)' }
    }
    if (
      !(await access('/dev/loop-control').then(
        () => true,
        () => false,
      ))
    ) {
      return { reason: 'no loop devices here (/dev/loop-control is missing)' }
    }
    const found: Partial<Tools> = {}
    for (const [key, name] of [
      ['mkfs', 'mkfs.ext4'],
      ['mount', 'mount'],
      ['umount', 'umount'],
      ['losetup', 'losetup'],
      ['resize2fs', 'resize2fs'],
      ['e2fsck', 'e2fsck'],
    ] as const) {
      const tool = await findTool(name, process.env.PATH)
      if (tool === null) return { reason: `${name} is not installed (e2fsprogs, util-linux)` }
      found[key] = tool
    }
    const tools = found as Tools
    // A trial: loop devices may exist and still be refused (a container without the device).
    const mountPoint = path.join(this.probeDir, '.disk-bound-probe')
    try {
      await mkdir(this.probeDir, { recursive: true })
      await this.unmountIfMounted(tools, mountPoint)
      await rm(imageOf(mountPoint), { force: true })
      await this.makeImage(tools, imageOf(mountPoint), PROBE_IMAGE_BYTES)
      await mkdir(mountPoint, { recursive: true })
      await run(tools.mount, ['-t', 'ext4', '-o', MOUNT_OPTIONS, imageOf(mountPoint), mountPoint])
      await run(tools.umount, [mountPoint])
    } catch (error) {
      return { reason: `mounting a disk image failed: ${messageOf(error)}` }
    } finally {
      await rm(mountPoint, { recursive: true, force: true }).catch(() => undefined)
      await rm(imageOf(mountPoint), { force: true }).catch(() => undefined)
    }
    return { tools }
  }

  /**
   * Mounts the workload's bounded disks before it starts: a new, empty container disk each
   * time (its image made afresh, at the size asked now), its volume as it was (grown when it
   * was rented larger). Returns whether the container disk was bounded (and so is empty);
   * false: the caller empties the directory itself.
   */
  async prepare(
    spec: Pick<WorkloadSpec, 'id' | 'containerDiskPath' | 'diskGb' | 'mounts'>,
  ): Promise<boolean> {
    const probe = await this.probe()
    if ('reason' in probe) return false
    let containerDisk = false
    try {
      for (const plan of diskBoundPlans(spec)) {
        if (plan.kind === 'container-disk') {
          await this.freshDisk(probe.tools, plan)
          containerDisk = true
        } else if (plan.kind === 'network-volume') {
          await this.sharedVolume(probe.tools, plan, spec.id)
        } else await this.keptVolume(probe.tools, plan)
      }
    } catch (error) {
      // Nothing stays mounted for a workload that does not start (its images stay).
      await this.unmountAll(spec).catch(() => undefined)
      throw error
    }
    return containerDisk
  }

  /**
   * Unmounts the workload's bounded disks and deletes their images: the workload is removed
   * for good. Nothing to do for a disk that was never bounded. Its network volumes are
   * unmounted (never deleted) when no other workload uses them: none this server started,
   * none in `claimedByOthers` (the mount points of the other workloads' plans).
   */
  async release(
    spec: Pick<WorkloadSpec, 'containerDiskPath' | 'diskGb' | 'mounts'> & { id?: string },
    claimedByOthers: ReadonlySet<string> = new Set(),
  ): Promise<void> {
    const probe = await this.probe()
    for (const plan of diskBoundPlans(spec)) {
      if (plan.kind !== 'network-volume') continue
      const users = this.sharedUsers.get(plan.mountPoint)
      if (spec.id !== undefined) users?.delete(spec.id)
      if ((users && users.size > 0) || claimedByOthers.has(plan.mountPoint)) continue
      if (!('tools' in probe)) continue
      const elsewhere = await this.claimedElsewhere(spec.id)
      if (!elsewhere || elsewhere.has(path.resolve(plan.mountPoint))) continue
      const tools = probe.tools
      await this.onVolume(plan.mountPoint, async () => {
        if ((this.sharedUsers.get(plan.mountPoint)?.size ?? 0) > 0) return
        const device = await this.deviceAt(plan.mountPoint)
        if (device === undefined) return
        // Never lazily: a file system still busy is in use (a workload this server does not
        // know of), and one detached lazily would be mounted a second time by the next start.
        if (device.startsWith('/dev/loop')) await unpaceLoopWrites(device).catch(() => undefined)
        await run(tools.umount, [plan.mountPoint]).catch(() => undefined)
      })
    }
    for (const plan of ownPlans(spec)) {
      if ('tools' in probe) await this.unmountIfMounted(probe.tools, plan.mountPoint)
      else if ((await this.deviceAt(plan.mountPoint)) !== undefined) {
        // Mounted by a server that bounded disks (this one does not): still let go of it.
        const umount = await findTool('umount', process.env.PATH)
        if (umount !== null) await run(umount, ['-l', plan.mountPoint]).catch(() => undefined)
      }
      await rm(plan.image, { force: true })
    }
  }

  /**
   * Unmounts the workload's bounded disks, keeping their images (a start that failed); its
   * network volumes stay mounted (a later release or sweep unmounts them).
   */
  async unmountAll(
    spec: Pick<WorkloadSpec, 'containerDiskPath' | 'diskGb' | 'mounts'> & { id?: string },
  ): Promise<void> {
    for (const plan of diskBoundPlans(spec)) {
      if (plan.kind === 'network-volume' && spec.id !== undefined) {
        this.sharedUsers.get(plan.mountPoint)?.delete(spec.id)
      }
    }
    const probe = await this.probe()
    if ('reason' in probe) return
    for (const plan of ownPlans(spec)) await this.unmountIfMounted(probe.tools, plan.mountPoint)
  }

  /**
   * Unmounts images under the data directory that no workload in `claimed` (their plans'
   * mount points) uses, and detaches loop devices of its images mounted nowhere: what a server
   * that crashed, or whose workloads were removed while it was down, left behind.
   */
  async sweep(claimed: ReadonlySet<string>): Promise<string[]> {
    const probe = await this.probe()
    if ('reason' in probe) return []
    const elsewhere = await this.claimedElsewhere()
    if (!elsewhere) return []
    const { stdout } = await run(probe.tools.losetup, ['-J', '-l'])
    const leftovers = leftoversUnder(
      this.root,
      parseLoopDevices(stdout),
      parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8')),
      new Set([...claimed, ...elsewhere]),
    )
    for (const mountPoint of leftovers.unmount) await this.unmount(probe.tools, mountPoint)
    for (const device of leftovers.detach) {
      await run(probe.tools.losetup, ['-d', device]).catch(() => undefined)
    }
    return [...leftovers.unmount, ...leftovers.detach]
  }

  /** Claimed mount points of a set of workload specs. */
  static claimedBy(
    specs: Iterable<Pick<WorkloadSpec, 'containerDiskPath' | 'diskGb' | 'mounts'>>,
  ): Set<string> {
    const claimed = new Set<string>()
    for (const spec of specs) for (const plan of diskBoundPlans(spec)) claimed.add(plan.mountPoint)
    return claimed
  }

  private async freshDisk(tools: Tools, plan: DiskBoundPlan): Promise<void> {
    await this.unmountIfMounted(tools, plan.mountPoint)
    await rm(plan.image, { force: true })
    // Files written into the bare directory while no image was mounted (before bounds) go too.
    await rm(plan.mountPoint, { recursive: true, force: true, maxRetries: 3 })
    await mkdir(plan.mountPoint, { recursive: true })
    await this.makeImage(tools, plan.image, plan.sizeBytes)
    await this.mount(tools, plan)
  }

  /**
   * A network volume: mounted by the first workload that uses it, then used as it is by the
   * others (never unmounted under them to be grown: it grows when next mounted afresh). It is
   * unmounted when the last workload on it is removed (release), or by the sweep of a server
   * start once no workload claims it; deleting the volume deletes its image
   * (volume-directories.ts).
   */
  private sharedVolume(tools: Tools, plan: DiskBoundPlan, workloadId: string): Promise<void> {
    return this.onVolume(plan.mountPoint, async () => {
      const users = this.sharedUsers.get(plan.mountPoint) ?? new Set<string>()
      this.sharedUsers.set(plan.mountPoint, users.add(workloadId))
      if ((await this.deviceAt(plan.mountPoint)) !== undefined) return
      // A volume written as a plain directory (before bounds) stays one: workloads started
      // then may still write into that directory, and a mount over it would hide their files.
      const image = await stat(plan.image).catch(() => undefined)
      const files = await readdir(plan.mountPoint).catch(() => [] as string[])
      if (image === undefined && files.length > 0) return
      await this.keptVolume(tools, plan)
    })
  }

  /** Runs `work` alone among this server's changes of the network volume at `mountPoint`. */
  private onVolume<T>(mountPoint: string, work: () => Promise<T>): Promise<T> {
    const previous = this.sharing.get(mountPoint) ?? Promise.resolve()
    const next = previous.then(work, work)
    const settled = next.catch(() => undefined)
    this.sharing.set(mountPoint, settled)
    void settled.then(() => {
      if (this.sharing.get(mountPoint) === settled) this.sharing.delete(mountPoint)
    })
    return next
  }

  private async keptVolume(tools: Tools, plan: DiskBoundPlan): Promise<void> {
    const image = await stat(plan.image).catch(() => undefined)
    const mounted = (await this.deviceAt(plan.mountPoint)) !== undefined
    // Mounted already at its size (a restart, or a server that was restarted): used as it is.
    if (mounted && image !== undefined && image.size >= plan.sizeBytes) return
    await this.unmountIfMounted(tools, plan.mountPoint)
    await mkdir(plan.mountPoint, { recursive: true })
    if (image === undefined) {
      await this.makeImage(tools, plan.image, plan.sizeBytes)
      return this.moveIntoImage(tools, plan)
    }
    // Rented larger since: grown offline (online resizing needs more than root has in some
    // containers). A smaller size keeps the image: shrinking could lose files.
    if (image.size < plan.sizeBytes) await this.grow(tools, plan)
    await this.mount(tools, plan)
  }

  /**
   * A volume that was a plain directory (written before bounds, or while the host had none)
   * keeps its files: they are copied into the new image, which fails with ENOSPC when they
   * exceed its size.
   */
  private async moveIntoImage(tools: Tools, plan: DiskBoundPlan): Promise<void> {
    const names = await readdir(plan.mountPoint)
    if (names.length === 0) return this.mount(tools, plan)
    const staging = `${plan.mountPoint}.moving`
    await rm(staging, { recursive: true, force: true })
    await mkdir(staging)
    await run(tools.mount, ['-t', 'ext4', '-o', MOUNT_OPTIONS, plan.image, staging])
    try {
      await rmdir(path.join(staging, 'lost+found')).catch(() => undefined)
      await cp(plan.mountPoint, staging, {
        recursive: true,
        preserveTimestamps: true,
        verbatimSymlinks: true,
      })
    } catch (error) {
      await this.unmount(tools, staging)
      await rm(plan.image, { force: true })
      throw new Error(
        `the volume at ${plan.mountPoint} holds more than its ${plan.sizeBytes / 1024 ** 3} GB ` +
          `(or could not be copied into its bounded image): ${(error as Error).message}`,
      )
    }
    await this.unmount(tools, staging)
    await rm(staging, { recursive: true, force: true })
    for (const name of names) {
      await rm(path.join(plan.mountPoint, name), { recursive: true, force: true, maxRetries: 3 })
    }
    await this.mount(tools, plan)
  }

  private async grow(tools: Tools, plan: DiskBoundPlan): Promise<void> {
    await truncate(plan.image, plan.sizeBytes)
    // resize2fs wants a checked file system; -p repairs only what is safe without asking.
    await run(tools.e2fsck, ['-f', '-p', plan.image]).catch((error: unknown) => {
      // 1: errors were corrected (a lost+found made again, for one); fine to resize.
      if ((error as { code?: unknown }).code !== 1) throw error
    })
    await run(tools.resize2fs, [plan.image])
  }

  private async makeImage(tools: Tools, image: string, sizeBytes: number): Promise<void> {
    // Sparse: the file has its size but takes only what the file system writes into it.
    await rm(image, { force: true })
    await writeFile(image, '', { mode: 0o600 })
    await truncate(image, sizeBytes)
    await run(tools.mkfs, mkfsArgs(image))
  }

  private async mount(tools: Tools, plan: DiskBoundPlan): Promise<void> {
    await run(tools.mount, ['-t', 'ext4', '-o', MOUNT_OPTIONS, plan.image, plan.mountPoint])
    const device = await this.deviceAt(plan.mountPoint)
    if (device?.startsWith('/dev/loop')) await paceLoopWrites(tools.losetup, device)
    // An empty disk, as the workload would have had without a bound.
    await rmdir(path.join(plan.mountPoint, 'lost+found')).catch(() => undefined)
  }

  private async unmountIfMounted(tools: Tools, mountPoint: string): Promise<void> {
    // Mounted more than once (a start that raced a crash): each goes; bounded, never a spin.
    for (let i = 0; i < 8 && (await this.deviceAt(mountPoint)) !== undefined; i++) {
      await this.unmount(tools, mountPoint)
    }
  }

  /** Unmounts; a file system still busy (a process of the workload lingers) is detached lazily. */
  private async unmount(tools: Tools, mountPoint: string): Promise<void> {
    const device = await this.deviceAt(mountPoint)
    if (device?.startsWith('/dev/loop')) await unpaceLoopWrites(device).catch(() => undefined)
    try {
      await run(tools.umount, [mountPoint])
    } catch {
      await run(tools.umount, ['-l', mountPoint])
    }
  }

  /** The device mounted at `mountPoint` (the last mount there), if any. */
  private async deviceAt(mountPoint: string): Promise<string | undefined> {
    const text = await readFile('/proc/self/mountinfo', 'utf8')
    return lastMountAt(text, path.resolve(mountPoint))?.source
  }
}

/** The plans whose disks belong to the workload (not its network volume's, which is shared). */
function ownPlans(spec: Pick<WorkloadSpec, 'containerDiskPath' | 'diskGb' | 'mounts'>) {
  return diskBoundPlans(spec).filter((plan) => plan.kind !== 'network-volume')
}
