import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import { findDataCenter, type Fleet } from '../catalog/fleet.js'
import {
  DEFAULT_VOLUME_TYPE,
  nameProblems,
  NETWORK_VOLUME_TYPES,
  shrinkProblem,
  sizeProblems,
  type NetworkVolume,
  type NetworkVolumeType,
} from './network-volume.js'
import type { NetworkVolumeRepo, VolumeQuotaGuard, VolumeStorage } from './ports.js'
import { hasQuota, NO_QUOTAS, type QuotaUse } from '../quotas/quota.js'
import type { QuotaService } from '../quotas/quota-service.js'

export interface CreateVolumeInput {
  name: string
  /** GB. */
  size: number
  dataCenterId: string
  type?: NetworkVolumeType
}

export interface UpdateVolumeInput {
  name?: string
  /** GB; may only grow. */
  size?: number
}

export interface VolumeServiceDeps {
  repo: NetworkVolumeRepo
  fleet: Fleet
  storage: VolumeStorage
  clock: Clock
  /**
   * What uses the volume now, one line each for people (`pod abc (name)`): pods that are not
   * TERMINATED and, later, serverless endpoints. A volume with users cannot be deleted.
   */
  usersOf: (accountId: string, volumeId: string) => Promise<string[]>
  /** The admin's quotas (docs/billing.md, "Quotas"); without it nothing is refused for them. */
  quotas?: QuotaService
}

/**
 * Optimistic updates retry when another request resized the volume in between; more than a few
 * collisions in a row on one volume means something is hammering it, and the caller may retry.
 */
const UPDATE_ATTEMPTS = 5

function validationFailed(problems: string[]): AppError {
  return new AppError(
    'VALIDATION_FAILED',
    `the request failed validation: ${problems.join('; ')}`,
    {
      errors: problems,
    },
  )
}

/** Network volumes: storage an account rents in a data center, mounted by its pods. */
export class VolumeService {
  constructor(private readonly deps: VolumeServiceDeps) {}

  /**
   * The check of the account's volume-GB quota for a write that adds `addedGb`, run by the
   * repo inside the write's transaction; undefined when the account has no such quota. The
   * early check refuses before any storage is made.
   */
  private async quotaGuard(
    accountId: string,
    addedGb: number,
    what: string,
  ): Promise<VolumeQuotaGuard | undefined> {
    const quotas = this.deps.quotas
    const limits = (await quotas?.limits(accountId)) ?? NO_QUOTAS
    if (!quotas || !hasQuota(limits) || limits.volumeGb === null || addedGb <= 0) return undefined
    await quotas.precheck(accountId, { volumeGb: addedGb }, what)
    return (usedGb) => {
      const use: QuotaUse = { gpus: 0, pods: 0, workers: 0, volumeGb: usedGb }
      quotas.assertWithin(limits, use, { volumeGb: addedGb }, what)
    }
  }

  private get now(): string {
    return this.deps.clock.now().toISOString()
  }

  /** 400 naming why the data center cannot hold a volume of this type. */
  private checkPlacement(dataCenterId: string, type: NetworkVolumeType): void {
    const dc = findDataCenter(this.deps.fleet, dataCenterId)
    if (!dc) {
      throw new AppError(
        'RULE_CONFLICT',
        `unknown data center "${dataCenterId}": see GET /v2/catalog/datacenters`,
      )
    }
    if (dc.networkVolumeTypes.length === 0) {
      throw new AppError('RULE_CONFLICT', `data center ${dc.id} offers no network volumes`)
    }
    if (!dc.networkVolumeTypes.includes(type)) {
      throw new AppError(
        'RULE_CONFLICT',
        `data center ${dc.id} does not offer ${type} network volumes; it offers ${dc.networkVolumeTypes.join(', ')}`,
      )
    }
  }

  async create(accountId: string, input: CreateVolumeInput): Promise<NetworkVolume> {
    const type = input.type ?? DEFAULT_VOLUME_TYPE
    const problems = [
      ...nameProblems(input.name),
      ...sizeProblems(input.size),
      ...(NETWORK_VOLUME_TYPES.includes(type)
        ? []
        : [`type: must be one of ${NETWORK_VOLUME_TYPES.join(', ')}, got ${JSON.stringify(type)}`]),
    ]
    if (problems.length > 0) throw validationFailed(problems)
    this.checkPlacement(input.dataCenterId, type)

    const guard = await this.quotaGuard(
      accountId,
      input.size,
      `create network volume "${input.name}" of ${input.size} GB`,
    )
    const now = this.now
    const volume: NetworkVolume = {
      id: newId.networkVolume(),
      accountId,
      name: input.name,
      sizeGb: input.size,
      dataCenterId: input.dataCenterId,
      type,
      createdAt: now,
      updatedAt: now,
    }
    await this.deps.storage.create(volume.id, volume.sizeGb, volume.dataCenterId)
    try {
      await this.deps.repo.insert(volume, guard)
    } catch (error) {
      // Without its record nobody can reach (or delete) the storage, so it must not outlive it.
      await this.deps.storage.remove(volume.id, volume.dataCenterId)
      throw error
    }
    return volume
  }

  list(accountId: string): Promise<NetworkVolume[]> {
    return this.deps.repo.listByAccount(accountId)
  }

  /** The account's volume, or undefined (another account's volume is undefined too). */
  async find(accountId: string, id: string): Promise<NetworkVolume | undefined> {
    const volume = await this.deps.repo.findById(id)
    return volume && volume.accountId === accountId ? volume : undefined
  }

  /** The account's volume; 404 otherwise (another account's volume does not exist for it). */
  async get(accountId: string, id: string): Promise<NetworkVolume> {
    const volume = await this.find(accountId, id)
    if (!volume) throw new AppError('NOT_FOUND', `network volume ${id} not found`)
    return volume
  }

  /** Renames and grows; 400 on a shrink. Growing records a size-history entry for billing. */
  async update(accountId: string, id: string, input: UpdateVolumeInput): Promise<NetworkVolume> {
    const problems = [
      ...(input.name !== undefined ? nameProblems(input.name) : []),
      ...(input.size !== undefined ? sizeProblems(input.size) : []),
    ]
    if (problems.length > 0) throw validationFailed(problems)

    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
      const current = await this.get(accountId, id)
      const sizeGb = input.size ?? current.sizeGb
      const shrink = shrinkProblem(current.sizeGb, sizeGb)
      if (shrink) throw new AppError('RULE_CONFLICT', shrink)
      const name = input.name ?? current.name
      if (name === current.name && sizeGb === current.sizeGb) return current

      const next: NetworkVolume = { ...current, name, sizeGb, updatedAt: this.now }
      const guard = await this.quotaGuard(
        accountId,
        sizeGb - current.sizeGb,
        `grow network volume ${id} from ${current.sizeGb} to ${sizeGb} GB`,
      )
      // Storage first: if it cannot grow, nothing is recorded (and nothing billed) for it.
      if (sizeGb > current.sizeGb) await this.deps.storage.resize(id, sizeGb, current.dataCenterId)
      let written: boolean
      try {
        written = await this.deps.repo.update(next, current.sizeGb, guard)
      } catch (error) {
        // Refused inside the transaction (a concurrent write took the quota): undo the growth.
        if (sizeGb > current.sizeGb) {
          await this.deps.storage.resize(id, current.sizeGb, current.dataCenterId)
        }
        throw error
      }
      if (written) return next
    }
    throw new AppError(
      'INVALID_STATE',
      `network volume ${id} was changed by other requests ${UPDATE_ATTEMPTS} times while this one tried to; retry`,
    )
  }

  /**
   * Deletes the volume and its files; 400 naming its users while anything uses it. The record
   * goes first so billing stops even if removing the files fails (they are then only an orphan
   * directory, which a later delete of the same id cannot reach but an operator can).
   */
  async delete(accountId: string, id: string): Promise<void> {
    const volume = await this.get(accountId, id)
    const users = await this.deps.usersOf(accountId, volume.id)
    if (users.length > 0) {
      throw new AppError(
        'RULE_CONFLICT',
        `network volume ${volume.id} is in use by ${users.join(', ')}; detach it from them first`,
      )
    }
    if (!(await this.deps.repo.delete(volume.id, this.now))) {
      throw new AppError('NOT_FOUND', `network volume ${id} not found`)
    }
    await this.deps.storage.remove(volume.id, volume.dataCenterId)
  }

  /** Where the volume's files are on the host, for a workload to mount. */
  hostPathOf(volume: NetworkVolume): string {
    return this.deps.storage.path(volume.id, volume.dataCenterId)
  }

  async usage(volume: NetworkVolume): Promise<{ usedBytes: number }> {
    return { usedBytes: await this.deps.storage.usedBytes(volume.id, volume.dataCenterId) }
  }
}
