import { execFile } from 'node:child_process'
import { readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * How much unwritten data a workload's disk may hold in the host's page cache before its own
 * writes wait for the disk. Without a bound, a workload writing as fast as it can leaves up to
 * the kernel's global dirty limit (a fifth of the host's memory) to be written back, and the
 * file system that holds its image (the data directory's, also the database's) stalls every
 * other writer behind that backlog; the server's event loop among them (SQLite syncs its WAL
 * there when it starts it over after a checkpoint).
 */
export const LOOP_WRITEBACK_BYTES = 64 * 1024 * 1024
/**
 * How much of a workload's disk may be on its way to the host's disk at once: requests of at
 * most LOOP_REQUEST_KB, LOOP_REQUESTS of them (4 MiB). The loop device's defaults (128 requests
 * of up to 1 280 KiB: 160 MiB) put that much ahead of the server's own writes in the disk's
 * queue; at 4 MiB a slow disk still answers the server in milliseconds. Measured: a workload's
 * `dd` runs as fast either way (1.1 to 1.3 GB/s on this project's machine).
 */
export const LOOP_REQUESTS = 16
export const LOOP_REQUEST_KB = 256

/** The kernel's per-device writeback settings of a block device, by its major:minor. */
function bdiDir(rdev: number): string {
  // Linux's encoding of dev_t (glibc's gnu_dev_major/minor): 12 bits of major, 20 of minor.
  const major = (rdev >>> 8) & 0xfff
  const minor = (rdev & 0xff) | ((rdev >>> 12) & 0xfff00)
  return `/sys/class/bdi/${major}:${minor}`
}

const queueDir = (device: string) => `/sys/block/${path.basename(device)}/queue`

/**
 * Paces the writes of a workload's disk (a loop device holding its image) to the disk under
 * it, so that writing past its size, or just writing fast, costs the workload its own time and
 * not the host's:
 * - direct I/O from the loop device to its image: the image's blocks do not sit a second time
 *   in the host's page cache, to be written back with the host file system's own data (whose
 *   journal commits, the server's syncs among them, would wait for them);
 * - a strict limit of LOOP_WRITEBACK_BYTES unwritten data on the loop device: its writer waits
 *   once that much is pending, however much the rest of the host has free;
 * - at most LOOP_REQUESTS requests of LOOP_REQUEST_KB in flight to the host's disk.
 * Each setting is best effort: a backing file system without direct I/O (tmpfs) or a kernel
 * without `max_bytes` (before Linux 6.2) keeps the kernel's default for that setting: the
 * disk's size is bounded all the same, only its writes are not paced.
 */
export async function paceLoopWrites(losetup: string, device: string): Promise<void> {
  await run(losetup, ['--direct-io=on', device]).catch(() => undefined)
  const bdi = bdiDir((await stat(device)).rdev)
  await setting(`${bdi}/max_bytes`, LOOP_WRITEBACK_BYTES)
  await setting(`${bdi}/strict_limit`, 1)
  await setting(`${queueDir(device)}/nr_requests`, LOOP_REQUESTS)
  await setting(`${queueDir(device)}/max_sectors_kb`, LOOP_REQUEST_KB)
}

/**
 * Gives a loop device back the kernel's default settings before it is detached: loop devices
 * outlive their images, and the next user of this one (another workload, or anything else on
 * the host) should not inherit a workload's limits.
 */
export async function unpaceLoopWrites(device: string): Promise<void> {
  const bdi = bdiDir((await stat(device)).rdev)
  await setting(`${bdi}/strict_limit`, 0)
  await setting(`${bdi}/max_ratio`, 100)
  const queue = queueDir(device)
  await setting(
    `${queue}/nr_requests`,
    await numberIn('/sys/module/loop/parameters/hw_queue_depth'),
  )
  await setting(`${queue}/max_sectors_kb`, await numberIn(`${queue}/max_hw_sectors_kb`))
}

async function setting(file: string, value: number | undefined): Promise<void> {
  if (value !== undefined) await writeFile(file, String(value)).catch(() => undefined)
}

async function numberIn(file: string): Promise<number | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined)
  return text === undefined ? undefined : Number(text.trim())
}
