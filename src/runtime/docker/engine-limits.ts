import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import type Docker from 'dockerode'
import type { UnenforcedLimit } from '../../shared/contained-limits.js'
import { blockDeviceOf } from '../block-device.js'
import { diskWriteRuleLimits, type DiskWriteRule } from '../workload-limits.js'
import {
  containmentKey,
  DISK_TRIAL_SIZE,
  diskQuotaTrialOf,
  diskWriteTrialOf,
  diskWriteUnenforced,
  isSettled,
  unenforcedLimitsOf,
  type BlkioHostConfig,
  type DiskQuotaTrial,
  type DiskWriteTrial,
  type EngineInfo,
} from './engine-containment.js'

/**
 * The repository of the empty image a disk size trial creates its container from (tagged at
 * random per trial, so that replicas trying one engine at once never remove each other's).
 */
export const DISK_TRIAL_IMAGE = 'podyard-disk-trial'
/** How long an inconclusive disk trial stands before it is made again. */
const DISK_TRIAL_RETRY_MS = 60_000
/** The trial containers' command: their image has no files, so it never runs. */
const TRIAL_COMMAND = '/never-run'
/** An empty tar archive (two zero blocks): the trial image has no files at all. */
const EMPTY_TAR = Buffer.alloc(1024)
/** The data root Docker uses when /info does not say. */
const DEFAULT_DATA_ROOT = '/var/lib/docker'

/** How an engine's containers are held to a disk write rate (workload-limits.ts). */
export interface EngineDiskWrite {
  rule: DiskWriteRule
  /**
   * The engine runs on this machine: the disk of its data root is found here (block-device.ts).
   * Another machine's disk is not known to podyard: its containers' writes are not limited.
   */
  onThisMachine: boolean
  /** Where the engine is, for reasons. */
  where: string
  /**
   * The disk under the data root of an engine on another machine, as the operator declares it
   * (a host's docker.dataDisk): its containers' writes are limited on it, once a trial
   * container shows the engine keeps limits on that device.
   */
  declaredDisk?: string
}

/**
 * What an engine enforces (engine-containment.ts), found out by asking it and kept while its
 * containmentKey holds, or until `retryAt` when the disk trial told nothing.
 */
export class EngineLimits {
  private containment:
    | { key: string; unenforced: UnenforcedLimit[]; retryAt?: number; writeDevice?: string }
    | undefined
  /** The finding-out under way: one disk trial at a time. */
  private finding: Promise<UnenforcedLimit[]> | undefined

  constructor(
    private readonly docker: Docker,
    private readonly diskWrite: EngineDiskWrite,
  ) {}

  /** The limits as last found out, without asking the engine. */
  get known(): UnenforcedLimit[] | undefined {
    return this.containment?.unenforced
  }

  /**
   * The limits the engine does not enforce: its cgroup controllers from /info, and one trial of
   * a container disk size. A definite answer is kept until the engine changes (containmentKey);
   * an inconclusive trial is made again after DISK_TRIAL_RETRY_MS.
   */
  async unenforcedLimits(known?: EngineInfo): Promise<UnenforcedLimit[]> {
    const info = known ?? ((await this.docker.info()) as EngineInfo)
    const key = containmentKey(info)
    const kept = this.containment
    if (kept?.key === key && (kept.retryAt === undefined || Date.now() < kept.retryAt))
      return kept.unenforced
    this.finding ??= (async () => {
      const writeDisk = await this.writeDiskOf(info)
      const { disk, diskWrite } = await this.tryLimits(writeDisk)
      const unenforced = [...unenforcedLimitsOf(info, disk), ...diskWriteUnenforced(diskWrite)]
      const settled = isSettled(disk) && diskWrite.outcome !== 'unknown'
      this.containment = {
        key,
        unenforced,
        ...(settled ? {} : { retryAt: Date.now() + DISK_TRIAL_RETRY_MS }),
        ...(diskWrite.outcome === 'enforced' ? { writeDevice: diskWrite.device } : {}),
      }
      return unenforced
    })().finally(() => (this.finding = undefined))
    return this.finding
  }

  /**
   * The disk a container's write limits are set on (BlkioDeviceWriteBps): where the engine
   * enforces them; undefined otherwise (the host reports `diskWrite` unenforced).
   */
  async diskWriteDevice(): Promise<string | undefined> {
    if (!this.containment) await this.unenforcedLimits()
    return this.containment?.writeDevice
  }

  /** The disk of the engine's data root, or why no write limit can be set on one. */
  private async writeDiskOf(info: EngineInfo): Promise<DiskWriteTrial> {
    const { rule, onThisMachine, where, declaredDisk } = this.diskWrite
    if (!diskWriteRuleLimits(rule))
      return {
        outcome: 'unenforced',
        reason: 'containment.diskWrite is 0 for both bandwidth and operations (docs/security.md)',
      }
    if (declaredDisk) return { outcome: 'enforced', device: declaredDisk, declared: true }
    if (!onThisMachine)
      return {
        outcome: 'unenforced',
        reason: `the engine (${where}) is on another machine and its host declares no docker.dataDisk (the disk under its data root, docs/fleet.md): podyard finds that disk for this machine's engine only`,
      }
    const dataRoot = info.DockerRootDir || DEFAULT_DATA_ROOT
    const disk = await blockDeviceOf(dataRoot)
    if (!disk.ok)
      return {
        outcome: 'unenforced',
        reason: `the engine's data root is on no disk a write limit can be set on: ${disk.reason}`,
      }
    return { outcome: 'enforced', device: disk.device }
  }

  /** Whether the engine enforces a container disk size: StorageOpt.size is sent only then. */
  async diskEnforced(): Promise<boolean> {
    const unenforced = this.containment?.unenforced ?? (await this.unenforcedLimits())
    return !unenforced.some((u) => u.limit === 'disk')
  }

  /**
   * Creates (never starts) containers from an empty image of its own, then removes them and
   * it: one with a writable layer of DISK_TRIAL_SIZE, since whether the storage driver
   * enforces sizes is known only by asking it (overlay2 does on xfs mounted with pquota, which
   * /info does not say); one with write limits on `writeDisk`'s disk (where there is one),
   * which an engine without the kernel's block I/O throttling creates with the limits dropped.
   */
  private async tryLimits(
    writeDisk: DiskWriteTrial,
  ): Promise<{ disk: DiskQuotaTrial; diskWrite: DiskWriteTrial }> {
    const tag = randomBytes(6).toString('hex')
    const image = `${DISK_TRIAL_IMAGE}:${tag}`
    try {
      const progress = await this.docker.importImage(Readable.from([EMPTY_TAR]), {
        repo: DISK_TRIAL_IMAGE,
        tag,
      })
      await new Promise<void>((resolve, reject) =>
        this.docker.modem.followProgress(
          progress,
          (error: Error | null, events: Array<{ error?: string }> | undefined) => {
            // The engine reports a failed import as an event of the stream, not an HTTP error.
            const failed = events?.find((event) => event.error)?.error
            if (error || failed) reject(error ?? new Error(failed))
            else resolve()
          },
        ),
      )
    } catch (error) {
      const message = `no trial image: ${(error as Error).message}`
      return {
        disk: { outcome: 'unknown', message },
        diskWrite: writeDisk.outcome === 'enforced' ? { outcome: 'unknown', message } : writeDisk,
      }
    }
    const disk = await this.tryDiskSize(image, tag)
    const diskWrite =
      writeDisk.outcome === 'enforced' ? await this.tryDiskWrite(image, tag, writeDisk) : writeDisk
    await this.docker
      .getImage(image)
      .remove()
      .catch(() => undefined)
    return { disk, diskWrite }
  }

  private async tryDiskSize(image: string, tag: string): Promise<DiskQuotaTrial> {
    let created: Docker.Container | undefined
    let failure: unknown
    try {
      created = await this.docker.createContainer({
        name: `${DISK_TRIAL_IMAGE}-${tag}`,
        Image: image,
        Cmd: [TRIAL_COMMAND],
        HostConfig: { StorageOpt: { size: DISK_TRIAL_SIZE } },
      })
    } catch (error) {
      failure = error
    }
    // Clean-up failures change nothing of the answer: the leftovers are a few bytes.
    await created?.remove({ force: true }).catch(() => undefined)
    return diskQuotaTrialOf(created ? undefined : failure)
  }

  private async tryDiskWrite(
    image: string,
    tag: string,
    disk: { device: string; declared?: boolean },
  ): Promise<DiskWriteTrial> {
    const { device } = disk
    let created: Docker.Container | undefined
    try {
      created = await this.docker.createContainer({
        name: `${DISK_TRIAL_IMAGE}-${tag}-write`,
        Image: image,
        Cmd: [TRIAL_COMMAND],
        HostConfig: {
          BlkioDeviceWriteBps: [{ Path: device, Rate: 1024 * 1024 }],
          BlkioDeviceWriteIOps: [{ Path: device, Rate: 100 }],
        },
      })
      const { HostConfig } = await created.inspect()
      const kept = diskWriteTrialOf(device, HostConfig as BlkioHostConfig)
      if (kept.outcome !== 'enforced' || !disk.declared) return kept
      return await this.startRefusal(created, device)
    } catch (error) {
      return { outcome: 'unknown', message: (error as Error).message }
    } finally {
      await created?.remove({ force: true }).catch(() => undefined)
    }
  }

  /**
   * Whether the engine's machine takes write limits on a declared disk. The engine creates a
   * container whatever its limits name and checks the device when it starts one: it refuses a
   * path its machine lacks, and one that is no block device (the kernel's cgroup refuses it).
   * The trial container's command does not exist in its empty image, so a start that got past
   * the limits fails at exactly that command, and nothing runs.
   */
  private async startRefusal(container: Docker.Container, device: string): Promise<DiskWriteTrial> {
    try {
      await container.start()
    } catch (error) {
      const message = (error as Error).message.trim()
      if (!message.includes(TRIAL_COMMAND))
        return {
          outcome: 'unenforced',
          reason: `docker.dataDisk ${device}: the engine refuses write limits on it (${message}); name the disk under its data root (docs/fleet.md)`,
        }
    }
    return { outcome: 'enforced', device }
  }
}
