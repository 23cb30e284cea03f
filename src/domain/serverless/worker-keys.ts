import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import { AppError } from '../../shared/app-error.js'
import type { EndpointView } from './endpoint.js'

/**
 * Per-endpoint worker keys (docs/job-api.md, "Worker keys"). A worker key is never stored: it is
 * `pydw_<endpointId>_<mac>`, where mac = base64url(HMAC-SHA256(secret, endpointId + generation)),
 * the secret is derived from the platform's encryption key, and the generation is a counter on
 * the endpoint that rotation bumps. The database therefore holds nothing a thief could use as a
 * key, the key survives restarts and is the same on every replica (they share the encryption
 * key), and rotation invalidates the old key at once.
 */
export const WORKER_KEY_PREFIX = 'pydw_'
/** The generation of a new endpoint. */
export const FIRST_WORKER_KEY_GENERATION = 1
const SECRET_BYTES = 32
/** HKDF context: the encryption key seals registry passwords; worker keys get their own subkey. */
const SECRET_INFO = 'podyard worker keys v1'
const MAC_LABEL = 'podyard-worker-key-v1'
/** base64url of a 32-byte HMAC-SHA256, without padding. */
const KEY_SHAPE = /^pydw_([a-z0-9]{1,64})_([A-Za-z0-9_-]{43})$/

/** Whether a presented credential is meant as a worker key (and never as an account API key). */
export function isWorkerKey(presented: string): boolean {
  return presented.startsWith(WORKER_KEY_PREFIX)
}

/**
 * The HMAC secret of worker keys, derived from the platform's encryption key with HKDF so that
 * one key is never used by two algorithms (AES-GCM for registry passwords, HMAC here).
 */
export function deriveWorkerKeySecret(encryptionKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), SECRET_INFO, SECRET_BYTES))
}

/** The generation counter stored on each endpoint (docs/serverless-endpoints.md, Storage). */
export interface WorkerKeyGenerations {
  /** The endpoint's current generation; undefined when there is no such endpoint. */
  workerKeyGeneration(endpointId: string): Promise<number | undefined>
  /** Adds one atomically and returns the new generation; undefined when there is no such endpoint. */
  bumpWorkerKeyGeneration(endpointId: string): Promise<number | undefined>
}

export type WorkerKeyFailure = 'malformed' | 'invalid' | 'other-endpoint'

export type WorkerKeyCheck =
  { ok: true; endpointId: string } | { ok: false; reason: WorkerKeyFailure; detail: string }

/** What the owner reads: `GET /v2/serverless/{id}/worker-key`. */
export interface WorkerKeyView {
  endpointId: string
  workerKey: string
  generation: number
}

/** Said when a worker key is presented to the job API, REST or GraphQL. */
export const WORKER_KEY_ELSEWHERE_DETAIL =
  'this is an endpoint worker key: it authenticates only the worker protocol of its endpoint ' +
  '(job-take, job-done, job-stream, job-stop, ping), not the job API, REST or GraphQL; use an API key'

/**
 * A worker key that verified is trusted this long without reading its endpoint's generation
 * again: every worker request authenticates, and the read plus the HMAC was a tenth of the
 * server's time per job (bench/README.md). A rotation through this process drops the cache at
 * once; one through another replica (or a deleted endpoint) takes effect here within this time.
 */
export const WORKER_KEY_CACHE_TTL_MS = 2_000
/** Keys remembered at most (one per endpoint in practice). */
const WORKER_KEY_CACHE_SIZE = 1_000

export interface WorkerKeyServiceDeps {
  generations: WorkerKeyGenerations
  /** The account's endpoint, or NOT_FOUND (another account's endpoint is 404 too). */
  ownEndpoint(accountId: string, endpointId: string): Promise<Pick<EndpointView, 'id'>>
  /** From `deriveWorkerKeySecret`; at least 32 bytes. */
  secret: Buffer
  /** Milliseconds since the epoch, for the verification cache; default `Date.now`. */
  now?: () => number
}

export class WorkerKeyService {
  private readonly secret: Buffer
  /** Keys that verified: the endpoint each names, and until when that is trusted. */
  private readonly verified = new Map<string, { endpointId: string; until: number }>()
  private readonly now: () => number

  constructor(private readonly deps: WorkerKeyServiceDeps) {
    if (deps.secret.length < SECRET_BYTES) {
      throw new Error(`the worker key secret must be at least ${SECRET_BYTES} bytes`)
    }
    this.secret = Buffer.from(deps.secret)
    this.now = deps.now ?? Date.now
  }

  private mac(endpointId: string, generation: number): Buffer {
    return createHmac('sha256', this.secret)
      .update(`${MAC_LABEL}\n${endpointId}\n${generation}`, 'utf8')
      .digest()
  }

  private keyOf(endpointId: string, generation: number): string {
    return `${WORKER_KEY_PREFIX}${endpointId}_${this.mac(endpointId, generation).toString('base64url')}`
  }

  private async generationOf(endpointId: string): Promise<number> {
    const generation = await this.deps.generations.workerKeyGeneration(endpointId)
    if (generation === undefined)
      throw new AppError('NOT_FOUND', `endpoint ${endpointId} not found`)
    return generation
  }

  /**
   * The endpoint's current worker key, for the platform itself (the workers it starts get it as
   * RUNPOD_AI_API_KEY). No account check: never expose this to a caller directly.
   */
  async workerKeyFor(endpointId: string): Promise<string> {
    return this.keyOf(endpointId, await this.generationOf(endpointId))
  }

  /** The current key with its generation (a worker started with an older one must go). */
  async current(endpointId: string): Promise<{ workerKey: string; generation: number }> {
    const generation = await this.generationOf(endpointId)
    return { workerKey: this.keyOf(endpointId, generation), generation }
  }

  /** The owner's read of the key; another account's endpoint is 404. */
  async read(accountId: string, endpointId: string): Promise<WorkerKeyView> {
    const { id } = await this.deps.ownEndpoint(accountId, endpointId)
    const generation = await this.generationOf(id)
    return { endpointId: id, workerKey: this.keyOf(id, generation), generation }
  }

  /** A new key; the old one stops working at once (workers holding it get 401). */
  async rotate(accountId: string, endpointId: string): Promise<WorkerKeyView> {
    const { id } = await this.deps.ownEndpoint(accountId, endpointId)
    const generation = await this.deps.generations.bumpWorkerKeyGeneration(id)
    this.verified.clear()
    if (generation === undefined) throw new AppError('NOT_FOUND', `endpoint ${id} not found`)
    return { endpointId: id, workerKey: this.keyOf(id, generation), generation }
  }

  /**
   * Whether `presented` is the current worker key of `endpointId`. A valid key of another
   * endpoint is told apart (403 rather than 401) because it names its endpoint and verifies.
   * Failure details never repeat the key.
   */
  async check(presented: string, endpointId: string): Promise<WorkerKeyCheck> {
    const cached = this.verified.get(presented)
    if (cached !== undefined && cached.until > this.now()) {
      return this.scoped(cached.endpointId, endpointId)
    }
    const match = KEY_SHAPE.exec(presented)
    if (!match) {
      return {
        ok: false,
        reason: 'malformed',
        detail: `the worker key is malformed: expected ${WORKER_KEY_PREFIX}<endpoint id>_<43 characters>`,
      }
    }
    const keyEndpointId = match[1]!
    const presentedMac = Buffer.from(match[2]!, 'base64url')
    // base64url ignores the spare low bits of the last character: only the canonical text counts.
    const canonical = presentedMac.length === 32 && presentedMac.toString('base64url') === match[2]
    const generation = await this.deps.generations.workerKeyGeneration(keyEndpointId)
    const valid =
      canonical &&
      generation !== undefined &&
      timingSafeEqual(presentedMac, this.mac(keyEndpointId, generation))
    if (!valid) {
      // One answer for "rotated" and "no such endpoint": which endpoints exist is not told.
      return {
        ok: false,
        reason: 'invalid',
        detail:
          'the worker key is not valid: it was rotated, or its endpoint was deleted; read the current one with GET /v2/serverless/{id}/worker-key',
      }
    }
    if (this.verified.size >= WORKER_KEY_CACHE_SIZE) this.verified.clear()
    this.verified.set(presented, {
      endpointId: keyEndpointId,
      until: this.now() + WORKER_KEY_CACHE_TTL_MS,
    })
    return this.scoped(keyEndpointId, endpointId)
  }

  /** Forgets every verified key: an endpoint was deleted or its key rotated. */
  forget(): void {
    this.verified.clear()
  }

  private scoped(keyEndpointId: string, endpointId: string): WorkerKeyCheck {
    if (keyEndpointId !== endpointId) {
      return {
        ok: false,
        reason: 'other-endpoint',
        detail: `this worker key belongs to endpoint ${keyEndpointId}: it cannot be used for endpoint ${endpointId}`,
      }
    }
    return { ok: true, endpointId }
  }
}
