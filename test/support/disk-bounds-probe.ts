import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { DiskBounds } from '../../src/runtime/disk-bounds/disk-bounds.js'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'

export const GIB = 1024 ** 3

/** Why this machine cannot bound disks (ext4 images on loop devices); [] when it can. */
export async function diskBoundsUnenforced() {
  const probeDir = mkdtempSync(path.join(tmpdir(), 'podyard-disk-probe-'))
  try {
    return await new DiskBounds({ mode: 'auto', root: probeDir, probeDir }).unenforced()
  } finally {
    rmSync(probeDir, { recursive: true, force: true })
  }
}

/**
 * Whether bounded pods of the process driver can run here (disk bounds and bubblewrap), and
 * bubblewrap's probe; when they cannot, says so as `<suite>: left out here: <why>`.
 */
export async function boundedProcessPods(
  suite: string,
): Promise<{ canBound: boolean; bubblewrapOk: boolean }> {
  const unenforced = await diskBoundsUnenforced()
  const bubblewrap = await probeBubblewrap({
    searchPath: process.env.PATH,
    probeUid: DEFAULT_SANDBOX_UID_BASE,
  })
  const can = unenforced.length === 0 && bubblewrap.ok
  if (!can) {
    console.log(
      `${suite}: left out here:`,
      unenforced[0]?.reason ?? (bubblewrap.ok ? '' : bubblewrap.reason),
    )
  }
  return { canBound: can, bubblewrapOk: bubblewrap.ok }
}

/** Writes past a 10 GB volume: 11 GB reserved at once, then 9 GB reserved and 2 GB written. */
export const FILL_TEN_GB_VOLUME = [
  'touch /runpod-volume/from-a',
  'fallocate -l 11G /runpod-volume/too-big 2>&1; echo "fallocate 11G exit $?"',
  // ext4 keeps what a failed fallocate reserved.
  'rm -f /runpod-volume/too-big',
  'fallocate -l 9G /runpod-volume/most; echo "fallocate 9G exit $?"',
  'dd if=/dev/zero of=/runpod-volume/rest bs=1M count=2048 2>&1; echo "dd exit $?"',
  'echo filled',
  'exec sleep 600',
].join('\n')

/** Logs the files of the volume (`volume holds: a b `), then idles. */
export const LIST_VOLUME = [
  'echo "volume holds: $(ls -A /runpod-volume | tr "\\n" " ")"',
  'exec sleep 600',
].join('\n')

/** The mounts at or under `dir` on this host. */
export function mountsAtOrUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint === dir || mountPoint.startsWith(`${dir}/`))
}

/** Loop devices attached to images under `dir`. */
export function loopsUnder(dir: string): string[] {
  return execFileSync('losetup', ['-a'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(`(${dir}/`))
}
