import { execFile } from 'node:child_process'
import { stat, writeFile } from 'node:fs/promises'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * How much unwritten data a workload's disk may hold in the host's page cache before its own
 * writes wait for the disk. Without a bound, a workload writing as fast as it can leaves up to
 * the kernel's global dirty limit (a fifth of the host's memory) to be written back, and the
 * file system that holds its image (the data directory's, also the database's) stalls every
 * other writer behind that backlog; the server's event loop among them.
 */
export const LOOP_WRITEBACK_BYTES = 64 * 1024 * 1024

/** The kernel's per-device writeback settings of a block device, by its major:minor. */
function bdiDir(rdev: number): string {
  // Linux's encoding of dev_t (glibc's gnu_dev_major/minor): 12 bits of major, 20 of minor.
  const major = (rdev >>> 8) & 0xfff
  const minor = (rdev & 0xff) | ((rdev >>> 12) & 0xfff00)
  return `/sys/class/bdi/${major}:${minor}`
}

/**
 * Paces the writes of a workload's disk (a loop device holding its image) to the disk under
 * it, so that writing past its size, or just writing fast, costs the workload its own time and
 * not the host's:
 * - direct I/O from the loop device to its image: the image's blocks do not sit a second time
 *   in the host's page cache, waiting to be written back with the host file system's own data;
 * - a strict limit of LOOP_WRITEBACK_BYTES unwritten data on the loop device: its writer waits
 *   once that much is pending, however much the rest of the host has free.
 * Each setting is best effort: a backing file system without direct I/O (tmpfs) or a kernel
 * without `max_bytes` (before Linux 6.2) keeps the kernel's default for that setting: the
 * disk's size is bounded all the same, only its writes are not paced.
 */
export async function paceLoopWrites(losetup: string, device: string): Promise<void> {
  await run(losetup, ['--direct-io=on', device]).catch(() => undefined)
  const dir = bdiDir((await stat(device)).rdev)
  await writeFile(`${dir}/max_bytes`, String(LOOP_WRITEBACK_BYTES))
    .then(() => writeFile(`${dir}/strict_limit`, '1'))
    .catch(() => undefined)
}

/**
 * Gives a loop device back the kernel's default writeback settings before it is detached:
 * loop devices outlive their images, and the next user of this one (another workload, or
 * anything else on the host) should not inherit a workload's limit.
 */
export async function unpaceLoopWrites(device: string): Promise<void> {
  const dir = bdiDir((await stat(device)).rdev)
  await writeFile(`${dir}/strict_limit`, '0').catch(() => undefined)
  await writeFile(`${dir}/max_ratio`, '100').catch(() => undefined)
}
