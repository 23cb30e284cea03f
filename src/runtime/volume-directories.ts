import { execFile } from 'node:child_process'
import { lstat, mkdir, opendir, readFile, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { lastMountAt } from './disk-bounds/disk-bound-plan.js'

const run = promisify(execFile)

/**
 * Where the process driver keeps the ext4 image that bounds a volume on this machine's own
 * storage: beside its directory (disk-bounds/disk-bound-plan.ts, DISK_IMAGE_SUFFIX).
 */
const BOUND_IMAGE_SUFFIX = '.ext4'

/**
 * Walking a volume stops after this many directory entries. A walk is one lstat per file, so
 * an unbounded one over millions of small files would hold a GET for minutes; past the bound
 * `usedBytes` is what was counted so far (a lower bound), which is good enough to show usage.
 */
export const MAX_USAGE_ENTRIES = 200_000
/**
 * How long a measured usage is reused, so a list of large volumes does not re-walk each one per
 * call. Only walks of at least DEFAULT_CACHE_FROM_ENTRIES entries are reused: a small volume is
 * cheap to measure, and measuring it every time keeps its usage current.
 */
export const DEFAULT_USAGE_CACHE_MS = 10_000
export const DEFAULT_CACHE_FROM_ENTRIES = 10_000

/**
 * Volume ids become directory names; anything but the id alphabet (`/`, `..`) could name a
 * directory outside the root, so it is refused rather than escaped.
 */
const VOLUME_ID = /^[a-z0-9]{1,64}$/

export interface DirectoryVolumeStorageOptions {
  /** The server's data directory; volumes live in `<dataDir>/volumes/<id>`. */
  dataDir: string
  /**
   * Data centers whose volumes live elsewhere: the directory where each one's shared storage
   * (NFS or similar) is mounted, the same path on its hosts and on this server.
   */
  dataCenterRoots?: Readonly<Record<string, string>>
  usageCacheMs?: number
  cacheFromEntries?: number
  /** Default MAX_USAGE_ENTRIES; tests lower it. */
  maxUsageEntries?: number
  /** Milliseconds now, for the usage cache; tests substitute it. */
  now?: () => number
}

/**
 * Network volumes as plain directories on this machine, one per volume under
 * `<dataDir>/volumes/<id>`; every pod placed on any host of this server (the process driver and
 * simulated hosts all run here) mounts the same directory, so they share its files.
 *
 * Here a volume is a directory; `create` makes only that. A volume on this machine's own storage
 * (not a data center's shared one: `isLocal`) is given its size by the process driver when it
 * bounds disks: an ext4 image beside the directory (`<id>.ext4`), mounted there while
 * workloads use it (disk-bounds/disk-bounds.ts); `remove` unmounts and deletes it too, and while it
 * is not mounted `usedBytes` is what the image takes on disk. Elsewhere the size is accounted,
 * not enforced: the size a volume is rented at is what podyard bills, and `usedBytes` reports
 * what is really stored, so a user (and an operator) can see a volume that holds more than
 * its size. A large volume's usage is measured at most once per `usageCacheMs`.
 */
export class DirectoryVolumeStorage {
  readonly root: string
  private readonly dataCenterRoots: Readonly<Record<string, string>>
  private readonly usageCacheMs: number
  private readonly now: () => number
  private readonly maxUsageEntries: number
  private readonly cacheFromEntries: number
  private readonly usage = new Map<string, { at: number; bytes: Promise<number> }>()

  constructor(options: DirectoryVolumeStorageOptions) {
    this.root = path.join(options.dataDir, 'volumes')
    this.dataCenterRoots = options.dataCenterRoots ?? {}
    this.usageCacheMs = options.usageCacheMs ?? DEFAULT_USAGE_CACHE_MS
    this.now = options.now ?? Date.now
    this.maxUsageEntries = options.maxUsageEntries ?? MAX_USAGE_ENTRIES
    this.cacheFromEntries = options.cacheFromEntries ?? DEFAULT_CACHE_FROM_ENTRIES
  }

  /** The volume's directory; in its data center's shared storage when that has one. */
  path(id: string, dataCenterId?: string): string {
    if (!VOLUME_ID.test(id)) throw new Error(`not a volume id: ${JSON.stringify(id)}`)
    return path.join(this.rootOf(dataCenterId), id)
  }

  /** Whether the volumes of the data center are on this machine's storage (else shared). */
  isLocal(dataCenterId?: string): boolean {
    return this.rootOf(dataCenterId) === this.root
  }

  private rootOf(dataCenterId: string | undefined): string {
    return (dataCenterId && this.dataCenterRoots[dataCenterId]) || this.root
  }

  /** Fails with EEXIST when the directory exists: a new volume never inherits old files. */
  async create(id: string, _sizeGb: number, dataCenterId?: string): Promise<void> {
    const dir = this.path(id, dataCenterId)
    await mkdir(this.rootOf(dataCenterId), { recursive: true })
    await mkdir(dir)
    this.usage.delete(id)
  }

  /** Nothing to do on disk (the size is not enforced); recreates a directory gone missing. */
  async resize(id: string, _sizeGb: number, dataCenterId?: string): Promise<void> {
    await mkdir(this.path(id, dataCenterId), { recursive: true })
  }

  async remove(id: string, dataCenterId?: string): Promise<void> {
    const dir = this.path(id, dataCenterId)
    if (await isMountPoint(dir)) {
      // Bounded and still mounted (no workload uses it: the volume could not be deleted).
      await run('umount', [dir]).catch(() => run('umount', ['-l', dir]))
    }
    await rm(dir, { recursive: true, force: true })
    await rm(`${dir}${BOUND_IMAGE_SUFFIX}`, { force: true })
    this.usage.delete(id)
  }

  /**
   * Bytes of the files in the volume: apparent sizes (what `du --apparent-size` counts, the same
   * on every file system), each hard-linked file once, symbolic links not followed. 0 when the
   * directory does not exist.
   */
  usedBytes(id: string, dataCenterId?: string): Promise<number> {
    const dir = this.path(id, dataCenterId)
    const cached = this.usage.get(id)
    const now = this.now()
    if (cached && now - cached.at < this.usageCacheMs) return cached.bytes
    const walk = measureVolume(dir, this.maxUsageEntries)
    const bytes = walk.then((result) => result.bytes)
    // Concurrent callers share one walk; afterwards it is kept only if it was a large one. A
    // failed walk is not kept: the next call tries again.
    this.usage.set(id, { at: now, bytes })
    walk.then(
      (result) => {
        if (result.entries < this.cacheFromEntries && this.usage.get(id)?.bytes === bytes) {
          this.usage.delete(id)
        }
      },
      () => {
        if (this.usage.get(id)?.bytes === bytes) this.usage.delete(id)
      },
    )
    return bytes
  }
}

async function isMountPoint(dir: string): Promise<boolean> {
  const resolved = path.resolve(dir)
  const mountInfo = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '')
  return lastMountAt(mountInfo, resolved) !== undefined
}

/**
 * A volume's usage: its files, or, for a bounded volume whose image is not mounted now (no
 * workload used it since the server started), what its image takes on the host's disk.
 */
async function measureVolume(
  dir: string,
  maxEntries: number,
): Promise<{ bytes: number; entries: number }> {
  const image = await stat(`${dir}${BOUND_IMAGE_SUFFIX}`).catch(() => undefined)
  if (image !== undefined && !(await isMountPoint(dir))) {
    return { bytes: image.blocks * 512, entries: 1 }
  }
  return measure(dir, maxEntries)
}

async function measure(
  dir: string,
  maxEntries: number,
): Promise<{ bytes: number; entries: number }> {
  let total = 0
  let entries = 0
  const seenLinks = new Set<string>()
  const pending = [dir]
  while (pending.length > 0 && entries < maxEntries) {
    const current = pending.pop()!
    let handle
    try {
      handle = await opendir(current)
    } catch (error) {
      // The volume itself missing is an empty volume; a subdirectory vanishing mid-walk or one
      // the server may not read is skipped rather than failing the whole measurement.
      if (isFsError(error, 'ENOENT', 'ENOTDIR', 'EACCES', 'EPERM')) continue
      throw error
    }
    for await (const entry of handle) {
      if (++entries > maxEntries) break
      const full = path.join(current, entry.name)
      if (entry.isDirectory()) {
        pending.push(full)
        continue
      }
      if (!entry.isFile()) continue
      try {
        const stat = await lstat(full)
        if (stat.nlink > 1) {
          const key = `${stat.dev}:${stat.ino}`
          if (seenLinks.has(key)) continue
          seenLinks.add(key)
        }
        total += stat.size
      } catch (error) {
        if (!isFsError(error, 'ENOENT', 'EACCES', 'EPERM')) throw error
      }
    }
  }
  return { bytes: total, entries }
}

function isFsError(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as NodeJS.ErrnoException | undefined)?.code ?? '')
}
