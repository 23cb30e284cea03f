import path from 'node:path'
import type { WorkloadSpec } from '../driver.js'

/**
 * What bounds a workload's disks on the process driver: each bounded directory is the mount
 * point of an ext4 file system in a sparse image file beside it (`<dir>.ext4`), attached
 * through a loop device. A write past the image's size fails with ENOSPC inside the workload;
 * the host's disk holds at most the image's size. See docs/runtime.md, "Disk bounds".
 */

/** Suffix of a bounded directory's image file, beside the directory. */
export const DISK_IMAGE_SUFFIX = '.ext4'

const GIB = 1024 ** 3

export interface DiskBoundPlan {
  /**
   * `container-disk`: emptied (a new image) on every start; `volume`: kept across starts;
   * `network-volume`: kept, and shared by every workload that mounts it: the volume owns its
   * image, never a workload (DiskBounds neither unmounts nor deletes it for one).
   */
  kind: 'container-disk' | 'volume' | 'network-volume'
  mountPoint: string
  image: string
  sizeBytes: number
}

/** The image file of a bounded directory. */
export function imageOf(mountPoint: string): string {
  return `${mountPoint}${DISK_IMAGE_SUFFIX}`
}

/**
 * The disks of a workload that get a bound: its container disk (`diskGb`) and each writable
 * persistent or network mount with a size (the pod's volume; a network volume on this
 * machine's own storage). Network volumes on a data center's shared storage come without a
 * size (an ext4 image is no file system for several hosts at once); read-only and platform
 * mounts need none.
 */
export function diskBoundPlans(
  spec: Pick<WorkloadSpec, 'containerDiskPath' | 'diskGb' | 'mounts'>,
): DiskBoundPlan[] {
  const plans: DiskBoundPlan[] = []
  if (spec.diskGb > 0) {
    plans.push({
      kind: 'container-disk',
      mountPoint: spec.containerDiskPath,
      image: imageOf(spec.containerDiskPath),
      sizeBytes: Math.round(spec.diskGb * GIB),
    })
  }
  for (const mount of spec.mounts) {
    const bounded = mount.kind === 'persistent' || mount.kind === 'network'
    if (!bounded || mount.readOnly || !(mount.sizeGb && mount.sizeGb > 0)) continue
    plans.push({
      kind: mount.kind === 'network' ? 'network-volume' : 'volume',
      mountPoint: mount.hostPath,
      image: imageOf(mount.hostPath),
      sizeBytes: Math.round(mount.sizeGb * GIB),
    })
  }
  return plans
}

/**
 * mkfs.ext4 arguments for an image: no reserved blocks (the tenant gets the whole size), and
 * the inode tables and journal initialised lazily, so that making a file system of any size
 * writes a few MB and the image stays sparse.
 */
export function mkfsArgs(image: string): string[] {
  return ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1', image]
}

/**
 * Mount options: `loop` attaches a loop device that detaches itself at unmount (autoclear);
 * `discard` gives the host back the blocks of deleted files; no set-uid programs or devices.
 */
export const MOUNT_OPTIONS = 'loop,discard,nosuid,nodev'

export interface MountEntry {
  mountPoint: string
  fsType: string
  source: string
}

/** The octal escapes of /proc/self/mountinfo (`\040` is a space). */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(parseInt(octal, 8)),
  )
}

/** The mounts in a /proc/self/mountinfo text. */
export function parseMountInfo(text: string): MountEntry[] {
  const mounts: MountEntry[] = []
  for (const line of text.split('\n')) {
    const fields = line.split(' ')
    const separator = fields.indexOf('-')
    if (separator < 5 || fields.length < separator + 3) continue
    mounts.push({
      mountPoint: unescapeMountField(fields[4]!),
      fsType: fields[separator + 1]!,
      source: unescapeMountField(fields[separator + 2]!),
    })
  }
  return mounts
}

/** A path as mountinfo writes it: space, tab, newline and backslash as octal escapes. */
function escapeMountField(field: string): string {
  return field.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`)
}

/**
 * The last mount at `mountPoint` (an absolute, resolved path) in a mountinfo text, parsing only
 * the lines that name it: on a host with a bounded disk per workload the text has thousands of
 * lines, and parsing them all on each start and stop of a workload made stopping a thousand pods
 * take half a minute of the server's CPU (bench/README.md).
 */
export function lastMountAt(text: string, mountPoint: string): MountEntry | undefined {
  const needle = ` ${escapeMountField(mountPoint)} `
  let found: MountEntry | undefined
  let from = 0
  for (;;) {
    const at = text.indexOf(needle, from)
    if (at < 0) return found
    const lineStart = text.lastIndexOf('\n', at) + 1
    const lineEnd = text.indexOf('\n', at)
    const [entry] = parseMountInfo(text.slice(lineStart, lineEnd < 0 ? text.length : lineEnd))
    if (entry?.mountPoint === mountPoint) found = entry
    if (lineEnd < 0) return found
    from = lineEnd
  }
}

export interface LoopDevice {
  name: string
  /** The image attached, without the ` (deleted)` losetup adds once it was removed. */
  backFile: string
}

/** The loop devices in `losetup -J -l` output (empty output: none attached). */
export function parseLoopDevices(json: string): LoopDevice[] {
  if (json.trim() === '') return []
  const parsed = JSON.parse(json) as { loopdevices?: Array<Record<string, unknown>> }
  const devices: LoopDevice[] = []
  for (const entry of parsed.loopdevices ?? []) {
    if (typeof entry.name !== 'string' || typeof entry['back-file'] !== 'string') continue
    devices.push({ name: entry.name, backFile: entry['back-file'].replace(/ \(deleted\)$/, '') })
  }
  return devices
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child)
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative)
}

export interface Leftovers {
  /** Mount points of images that no workload claims: unmounted (their loop device goes too). */
  unmount: string[]
  /** Loop devices of such images that are mounted nowhere (a crash between attach and mount). */
  detach: string[]
}

/**
 * What a server that crashed (or whose workloads were removed while it was down) left behind
 * under `root`: images under it attached to loop devices, at mount points no workload's plan
 * (`claimed`) names, or mounted nowhere. Mounts and loop devices of anything else on the host
 * are never touched.
 */
export function leftoversUnder(
  root: string,
  loops: readonly LoopDevice[],
  mounts: readonly MountEntry[],
  claimed: ReadonlySet<string>,
): Leftovers {
  const unmount: string[] = []
  const detach: string[] = []
  for (const loop of loops) {
    if (!loop.backFile.endsWith(DISK_IMAGE_SUFFIX) || !isInside(loop.backFile, root)) continue
    const at = mounts.filter((m) => m.source === loop.name).map((m) => m.mountPoint)
    if (at.length === 0) {
      detach.push(loop.name)
      continue
    }
    for (const mountPoint of at) {
      if (!(claimed.has(mountPoint) && imageOf(mountPoint) === loop.backFile)) {
        unmount.push(mountPoint)
      }
    }
  }
  return { unmount, detach }
}
