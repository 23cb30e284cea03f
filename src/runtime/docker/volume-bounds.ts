import { stat } from 'node:fs/promises'
import path from 'node:path'
import type Docker from 'dockerode'
import type { UnenforcedLimit } from '../../shared/contained-limits.js'
import type { WorkloadMount, WorkloadSpec } from '../driver.js'
import { imageOf } from '../disk-bounds/disk-bound-plan.js'
import type { DiskBounds } from '../disk-bounds/disk-bounds.js'

/** The disks of a workload the docker driver bounds: only its network volumes. */
type BoundedVolumes = Pick<WorkloadSpec, 'id' | 'containerDiskPath' | 'diskGb' | 'mounts'>

/**
 * Network volumes on this machine's storage, bounded at their size for the containers of this
 * machine's engine with the process driver's disk bounds (disk-bounds.ts, the same instance):
 * the volume's ext4 image is mounted at its directory by the first workload that uses it,
 * whichever driver runs it, and the container binds that directory. It is unmounted when the
 * last workload on it is removed. The container disk is the engine's (StorageOpt.size), and a
 * persistent mount a named volume: neither is bounded here.
 */
export class VolumeBounds {
  /** @param binds the directories the platform's containers on this engine bind */
  constructor(
    private readonly bounds: DiskBounds,
    binds: () => Promise<Iterable<string>>,
  ) {
    // Never unmounted under a container, by a sweep of the process driver or its release.
    bounds.claimAlso(binds)
  }

  /** The limits left unenforced where this machine bounds no disks (`volume` among them). */
  unenforced(): Promise<UnenforcedLimit[]> {
    return this.bounds.unenforced()
  }

  /** Mounts the spec's bounded network volumes; returns what undoes it if the start fails. */
  async prepare(spec: WorkloadSpec): Promise<() => Promise<void>> {
    const volumes = boundedVolumesOf(spec.id, spec.mounts)
    if (!volumes) return async () => {}
    await this.bounds.prepare(volumes)
    return () => this.bounds.unmountAll(volumes).catch(() => undefined)
  }

  /**
   * The removed containers' bounded network volumes are unmounted unless one of `others` (the
   * containers still there) binds them, or another workload of this server uses them.
   */
  async release(
    id: string,
    removed: readonly Docker.ContainerInfo[],
    others: readonly Docker.ContainerInfo[],
  ): Promise<void> {
    const sources = new Set<string>()
    for (const container of removed) {
      for (const source of bindSources(container)) {
        // Only a bounded volume has an image beside it: anything else bound is left alone.
        if (
          await stat(imageOf(source)).then(
            () => true,
            () => false,
          )
        )
          sources.add(source)
      }
    }
    if (sources.size === 0) return
    const claimed = new Set(others.flatMap(bindSources))
    const mounts = [...sources].map((hostPath): WorkloadMount => ({
      kind: 'network',
      hostPath,
      containerPath: hostPath,
      sizeGb: 1,
    }))
    await this.bounds.release({ id, containerDiskPath: '', diskGb: 0, mounts }, claimed)
  }
}

function boundedVolumesOf(
  id: string,
  mounts: readonly WorkloadMount[],
): BoundedVolumes | undefined {
  const network = mounts.filter(
    (mount) => mount.kind === 'network' && !mount.readOnly && (mount.sizeGb ?? 0) > 0,
  )
  return network.length > 0 ? { id, containerDiskPath: '', diskGb: 0, mounts: network } : undefined
}

export function bindSources(container: Docker.ContainerInfo): string[] {
  return (container.Mounts ?? [])
    .filter((mount) => mount.Type === 'bind' && mount.Source)
    .map((mount) => path.resolve(mount.Source))
}
