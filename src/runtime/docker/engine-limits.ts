import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import type Docker from 'dockerode'
import type { UnenforcedLimit } from '../../shared/contained-limits.js'
import {
  containmentKey,
  DISK_TRIAL_SIZE,
  diskQuotaTrialOf,
  isSettled,
  unenforcedLimitsOf,
  type DiskQuotaTrial,
  type EngineInfo,
} from './engine-containment.js'

/**
 * The repository of the empty image a disk size trial creates its container from (tagged at
 * random per trial, so that replicas trying one engine at once never remove each other's).
 */
export const DISK_TRIAL_IMAGE = 'podyard-disk-trial'
/** How long an inconclusive disk trial stands before it is made again. */
const DISK_TRIAL_RETRY_MS = 60_000
/** An empty tar archive (two zero blocks): the trial image has no files at all. */
const EMPTY_TAR = Buffer.alloc(1024)

/**
 * What an engine enforces (engine-containment.ts), found out by asking it and kept while its
 * containmentKey holds, or until `retryAt` when the disk trial told nothing.
 */
export class EngineLimits {
  private containment: { key: string; unenforced: UnenforcedLimit[]; retryAt?: number } | undefined
  /** The finding-out under way: one disk trial at a time. */
  private finding: Promise<UnenforcedLimit[]> | undefined

  constructor(private readonly docker: Docker) {}

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
      const trial = await this.tryDiskSize()
      const unenforced = unenforcedLimitsOf(info, trial)
      this.containment = {
        key,
        unenforced,
        ...(isSettled(trial) ? {} : { retryAt: Date.now() + DISK_TRIAL_RETRY_MS }),
      }
      return unenforced
    })().finally(() => (this.finding = undefined))
    return this.finding
  }

  /** Whether the engine enforces a container disk size: StorageOpt.size is sent only then. */
  async diskEnforced(): Promise<boolean> {
    const unenforced = this.containment?.unenforced ?? (await this.unenforcedLimits())
    return !unenforced.some((u) => u.limit === 'disk')
  }

  /**
   * Creates (never starts) a container with a writable layer of DISK_TRIAL_SIZE from an empty
   * image of its own, then removes both: whether the storage driver enforces sizes is known
   * only by asking it (overlay2 does on xfs mounted with pquota, which /info does not say).
   */
  private async tryDiskSize(): Promise<DiskQuotaTrial> {
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
      return { outcome: 'unknown', message: `no trial image: ${(error as Error).message}` }
    }
    let created: Docker.Container | undefined
    let failure: unknown
    try {
      created = await this.docker.createContainer({
        name: `${DISK_TRIAL_IMAGE}-${tag}`,
        Image: image,
        Cmd: ['/never-run'],
        HostConfig: { StorageOpt: { size: DISK_TRIAL_SIZE } },
      })
    } catch (error) {
      failure = error
    }
    // Clean-up failures change nothing of the answer: the leftovers are a few bytes.
    await created?.remove({ force: true }).catch(() => undefined)
    await this.docker
      .getImage(image)
      .remove()
      .catch(() => undefined)
    return diskQuotaTrialOf(created ? undefined : failure)
  }
}
