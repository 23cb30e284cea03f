import { mkdir, readdir, rm } from 'node:fs/promises'
import path from 'node:path'
import type { WorkloadSpec } from '../driver.js'
import type { DiskBounds } from '../disk-bounds/disk-bounds.js'
import { isValidWorkloadId } from './workload-record.js'

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child)
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative))
}

/** Refuses a spec whose id or disk and mount paths would let a start wipe what it must not. */
export function checkSpec(spec: WorkloadSpec, stateDir: string): void {
  if (!isValidWorkloadId(spec.id)) throw new Error(`invalid workload id ${JSON.stringify(spec.id)}`)
  const disk = spec.containerDiskPath
  // The disk is emptied on every start: a path that holds the state directory, or the root,
  // would be wiped with it.
  if (!path.isAbsolute(disk) || path.resolve(disk) === '/' || isInside(stateDir, disk)) {
    throw new Error(`workload ${spec.id}: unusable container disk path ${JSON.stringify(disk)}`)
  }
  for (const mount of spec.mounts) {
    if (!path.isAbsolute(mount.hostPath) || !path.isAbsolute(mount.containerPath)) {
      throw new Error(`workload ${spec.id}: mount paths must be absolute`)
    }
    // Volumes outlive the container disk; one inside it would be wiped with it.
    if (isInside(mount.hostPath, disk)) {
      throw new Error(`workload ${spec.id}: mount ${mount.hostPath} is inside the container disk`)
    }
  }
}

/** A fresh container disk and the volumes' directories, before a start. */
export async function prepareDisks(disks: DiskBounds, spec: WorkloadSpec): Promise<void> {
  // Bounded: a new empty image is mounted there; else the directory is emptied.
  if (!(await disks.prepare(spec))) await emptyDirectory(spec.containerDiskPath)
  for (const mount of spec.mounts) await mkdir(mount.hostPath, { recursive: true })
}

/**
 * The container disk goes with its workload (volumes stay, and a bounded volume is unmounted
 * unless `claimedByOthers`, the other workloads' mount points, names it).
 */
export async function removeContainerDisk(
  disks: DiskBounds,
  spec: Pick<WorkloadSpec, 'containerDiskPath' | 'diskGb' | 'mounts'>,
  claimedByOthers: ReadonlySet<string>,
): Promise<void> {
  await disks.release(spec, claimedByOthers)
  await rm(spec.containerDiskPath, {
    recursive: true,
    force: true,
    maxRetries: 3,
  })
}

/** Empties a directory (creating it when missing) without removing the directory itself. */
async function emptyDirectory(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true })
  const names = await readdir(dir)
  await Promise.all(
    names.map((name) => rm(path.join(dir, name), { recursive: true, force: true, maxRetries: 3 })),
  )
}
