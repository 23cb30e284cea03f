import type { Endpoint } from '../serverless/endpoint.js'

/**
 * Images pulled ahead of time on the hosts (docs/fleet.md, "Images ahead of time"): what is on
 * which host, and the pulls in flight, as every replica sees them.
 */

/**
 * PULLING: a pull runs; PRESENT: the host has the image; FAILED: the last pull failed; ABSENT
 * (in an endpoint's readiness only): no pull recorded there yet, the first worker there pulls it.
 */
export type HostImageState = 'PULLING' | 'PRESENT' | 'FAILED' | 'ABSENT'

export interface HostImage {
  hostId: string
  /** The reference as the endpoint or the admin named it (`name:tag`, `registry/name@digest`). */
  image: string
  state: HostImageState
  /** FAILED: why (the engine's message, no secret); null otherwise. */
  reason: string | null
  /** Bytes downloaded so far and in all, summed over the layers the engine reported; null: none. */
  bytesDone: number | null
  bytesTotal: number | null
  startedAt: string
  updatedAt: string
}

/**
 * A PULLING row not updated for this long is taken to be lost (its replica stopped): another
 * pull may claim the host and image. A running pull refreshes its row at least this often.
 */
export const STALE_PULL_MS = 60_000

/** Rows of host_images (migration 0029). */
export interface HostImageRepo {
  list(filter?: { hostId?: string; image?: string }): Promise<HostImage[]>
  /**
   * Marks the image PULLING on the host unless a pull there is in flight (PULLING, updated
   * after `staleBefore`); true when this call claimed it. One claim per host and image across
   * replicas: the second caller joins the first's pull by watching the row.
   */
  claim(hostId: string, image: string, at: string, staleBefore: string): Promise<boolean>
  progress(
    hostId: string,
    image: string,
    bytesDone: number,
    bytesTotal: number,
    at: string,
  ): Promise<void>
  finish(
    hostId: string,
    image: string,
    state: 'PRESENT' | 'FAILED',
    reason: string | null,
    at: string,
  ): Promise<void>
}

/** Which hosts to pull an image on, and with whose registry credentials. */
export interface ImagePullRequest {
  image: string
  /** Only these hosts; absent: every Docker host taking placements. */
  hostIds?: string[]
  /** A container registry auth of `accountId` (`/v2/registries`) for a private image. */
  registryAuthId?: string
  accountId?: string
}

/** The pulls the admin starts and the images the hosts hold (control/image-prepull.ts). */
export interface HostImagePulls {
  list(filter?: { hostId?: string; image?: string }): Promise<HostImage[]>
  /** Starts the pulls (in the background) and answers each host's row as it is now. */
  pull(request: ImagePullRequest): Promise<HostImage[]>
  /** The endpoint's image on each host that may run its workers. */
  readiness(endpoint: Endpoint): Promise<HostImage[]>
}
