import { MAX_NAME_LENGTH } from '../resource-names.js'
import { NETWORK_VOLUME_TYPES, type NetworkVolumeType } from '../catalog/fleet.js'

export { NETWORK_VOLUME_TYPES, type NetworkVolumeType }

/** Wire-compat §3.3: a network volume is 10 to 4096 GB (REST v2 NetworkVolume.size). */
export const MIN_VOLUME_GB = 10
export const MAX_VOLUME_GB = 4096
/** The name bound every named resource of the REST API shares (pods, templates, volumes). */
export const MAX_VOLUME_NAME_LENGTH = MAX_NAME_LENGTH
/** What a create without `type` gets; every data center that offers volumes offers it by default. */
export const DEFAULT_VOLUME_TYPE: NetworkVolumeType = 'STANDARD'

/** Storage an account rents in one data center, shared by the pods and workers that mount it. */
export interface NetworkVolume {
  /** 10 lowercase alphanumerics, the shape RunPod's clients see (`newId.networkVolume()`). */
  id: string
  accountId: string
  name: string
  sizeGb: number
  dataCenterId: string
  type: NetworkVolumeType
  createdAt: string
  updatedAt: string
}

/**
 * One entry of a volume's size history: from `changedAt` on the volume had `sizeGb` GB, until
 * the next entry. A volume's first entry is its creation; deleting it ends the history with an
 * entry of 0 GB, so billing can tell when storage stopped being rented.
 */
export interface VolumeSizeRecord {
  sizeGb: number
  changedAt: string
}

/** Problems with a size, as `<field>: <problem>` lines; empty when it is a valid size. */
export function sizeProblems(sizeGb: unknown, field = 'size'): string[] {
  if (typeof sizeGb !== 'number' || !Number.isInteger(sizeGb)) {
    return [`${field}: must be an integer number of GB, got ${JSON.stringify(sizeGb)}`]
  }
  if (sizeGb < MIN_VOLUME_GB || sizeGb > MAX_VOLUME_GB) {
    return [`${field}: must be between ${MIN_VOLUME_GB} and ${MAX_VOLUME_GB} GB, got ${sizeGb}`]
  }
  return []
}

/** Problems with a name, as `<field>: <problem>` lines; empty when it is a valid name. */
export function nameProblems(name: unknown, field = 'name'): string[] {
  if (typeof name !== 'string') return [`${field}: must be a string`]
  if (name.length < 1) return [`${field}: must not be empty`]
  if (name.length > MAX_VOLUME_NAME_LENGTH) {
    return [`${field}: must be at most ${MAX_VOLUME_NAME_LENGTH} characters, got ${name.length}`]
  }
  return []
}

/** Sizes only grow (wire-compat §3.2: a size decrease is a 400), so shrinking is refused. */
export function shrinkProblem(fromGb: number, toGb: number): string | undefined {
  return toGb < fromGb ? `size cannot shrink from ${fromGb} to ${toGb} GB` : undefined
}
