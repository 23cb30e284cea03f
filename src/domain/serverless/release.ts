import { WORKER_FIELDS } from './endpoint-rules.js'
import type { Endpoint } from './endpoint.js'

/**
 * A release of an endpoint (RunPod's v2 `/serverless/{id}/releases`): a version of what its
 * workers run, and what changed to make it. Every endpoint version is one release; podyard
 * builds nothing, so every release is `MANUAL` (a create or a change through the API).
 */
export interface Release {
  id: string
  endpointId: string
  version: number
  createdAt: string
  diff: ReleaseDiffEntry[]
}

/** One changed field: `field` as the REST Endpoint names it; `old` null when it is new. */
export interface ReleaseDiffEntry {
  field: string
  old: unknown
  new: unknown
}

export interface ReleaseRepo {
  insert(release: Release): Promise<void>
  /** The endpoint's releases, newest first. */
  listByEndpoint(endpointId: string): Promise<Release[]>
}

/**
 * The fields a worker is started with that differ between two versions of an endpoint; with no
 * `before` (a new endpoint), every one of them, each from null.
 */
export function releaseDiff(
  before: Endpoint | undefined,
  after: Pick<Endpoint, (typeof WORKER_FIELDS)[number]>,
): ReleaseDiffEntry[] {
  return WORKER_FIELDS.filter(
    (field) => JSON.stringify(before?.[field] ?? null) !== JSON.stringify(after[field] ?? null),
  ).map((field) => ({ field, old: before?.[field] ?? null, new: after[field] ?? null }))
}
