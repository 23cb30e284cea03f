import { readFile, realpath, stat } from 'node:fs/promises'
import path from 'node:path'

/**
 * The whole disk a directory is stored on, as cgroups' write limits name it: Docker's
 * BlkioDeviceWriteBps wants its path, cgroup files its `major:minor`. A partition's writes are
 * limited on its disk (io.max refuses partitions); a device-mapper or md device is a disk of
 * its own.
 */
export type BlockDeviceChoice =
  { ok: true; device: string; majorMinor: string } | { ok: false; reason: string }

/** glibc's major()/minor() of a stat's st_dev. */
export function splitDeviceNumber(dev: number): { major: number; minor: number } {
  const n = BigInt(dev)
  const major = Number(((n >> 8n) & 0xfffn) | ((n >> 32n) & ~0xfffn))
  const minor = Number((n & 0xffn) | ((n >> 12n) & ~0xffn))
  return { major, minor }
}

/** The DEVNAME of a uevent file's text. */
export function devNameOf(uevent: string): string | undefined {
  return /^DEVNAME=(.+)$/m.exec(uevent)?.[1]
}

/**
 * The disk `dir` is on, from its st_dev and /sys/dev/block. A file system on no block device
 * (tmpfs, overlay, btrfs's anonymous devices, NFS) has none: why is said.
 */
export async function blockDeviceOf(dir: string, sysRoot = '/sys'): Promise<BlockDeviceChoice> {
  let dev: number
  try {
    dev = (await stat(dir)).dev
  } catch (error) {
    return { ok: false, reason: `cannot read ${dir} here (${(error as Error).message})` }
  }
  const { major, minor } = splitDeviceNumber(dev)
  if (major === 0) {
    return {
      ok: false,
      reason: `${dir} is on a file system with no block device (device ${major}:${minor}: tmpfs, overlay, btrfs or a network file system)`,
    }
  }
  let sysDir: string
  try {
    sysDir = await realpath(path.join(sysRoot, 'dev', 'block', `${major}:${minor}`))
  } catch {
    return { ok: false, reason: `${dir} is on device ${major}:${minor}, which is no block device` }
  }
  // A partition's directory is inside its disk's.
  const isPartition = await stat(path.join(sysDir, 'partition')).then(
    () => true,
    () => false,
  )
  const diskDir = isPartition ? path.dirname(sysDir) : sysDir
  const majorMinor = (await readFile(path.join(diskDir, 'dev'), 'utf8').catch(() => '')).trim()
  const name = devNameOf(await readFile(path.join(diskDir, 'uevent'), 'utf8').catch(() => ''))
  if (!/^\d+:\d+$/.test(majorMinor) || !name) {
    return { ok: false, reason: `the disk of ${dir} (${diskDir}) has no device number or name` }
  }
  return { ok: true, device: `/dev/${name}`, majorMinor }
}
