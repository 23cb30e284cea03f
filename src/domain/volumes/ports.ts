import type { NetworkVolume, VolumeSizeRecord } from './network-volume.js'

/**
 * Called inside the write's transaction with the GB of the account's volumes as counted there,
 * before the write; throws to refuse it (the account's volume quota).
 */
export type VolumeQuotaGuard = (usedGb: number) => void

export interface NetworkVolumeRepo {
  /** Stores a new volume and the first entry of its size history, together, if `guard` lets it. */
  insert(volume: NetworkVolume, guard?: VolumeQuotaGuard): Promise<void>
  findById(id: string): Promise<NetworkVolume | undefined>
  /** The account's volumes, oldest first. */
  listByAccount(accountId: string): Promise<NetworkVolume[]>
  /**
   * Writes `volume` only if the stored size is still `expectedSizeGb` (so two concurrent resizes
   * cannot undo each other) and, when the size changes, appends a size-history entry dated
   * `volume.updatedAt`, together. False when nothing was written (gone, or resized meanwhile).
   */
  update(volume: NetworkVolume, expectedSizeGb: number, guard?: VolumeQuotaGuard): Promise<boolean>
  /**
   * Forgets the volume and ends its size history with a 0 GB entry dated `deletedAt`, together.
   * False when there was no such volume.
   */
  delete(id: string, deletedAt: string): Promise<boolean>
  /** Every size the volume has had, oldest first (kept after the volume is deleted, for billing). */
  sizeHistory(id: string): Promise<VolumeSizeRecord[]>
}

/**
 * Where volumes' files live. Each volume is a place a workload can mount; what `sizeGb` means to
 * an implementation (a hard quota or only an account of what is rented) is its own to document.
 */
/**
 * Where network volumes' files live. A volume belongs to a data center: every host of it (and
 * this server) sees the same directory, the data center's shared storage.
 */
export interface VolumeStorage {
  /** Makes an empty volume; fails if one with this id already exists. */
  create(id: string, sizeGb: number, dataCenterId: string): Promise<void>
  resize(id: string, sizeGb: number, dataCenterId: string): Promise<void>
  /** Deletes the volume and its files; nothing happens when it does not exist. */
  remove(id: string, dataCenterId: string): Promise<void>
  /** The host path a workload mounts. */
  path(id: string, dataCenterId: string): string
  /** Bytes of files in the volume now (0 when it does not exist). */
  usedBytes(id: string, dataCenterId: string): Promise<number>
}
