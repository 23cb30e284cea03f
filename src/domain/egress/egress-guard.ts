/**
 * The egress policy applied (docs/security.md "Egress policy"): `vet` when a URL is accepted
 * (a submission), cheap and cached; `destination` each time the platform is about to connect,
 * resolving afresh and returning the checked addresses, the only ones it may connect to.
 */
import type { Clock } from '../../shared/clock.js'
import { formatIp, parseIp, type IpAddress } from './ip-address.js'
import {
  describeRefusal,
  parseTarget,
  type EgressPolicy,
  type EgressRefusal,
  type EgressRule,
  type EgressTarget,
} from './egress-policy.js'

/** Resolves a host name to its addresses (A and AAAA); rejects when it does not resolve. */
export type HostResolver = (hostname: string) => Promise<string[]>

/** How long a submission waits for a name to resolve before accepting it unchecked. */
export const EGRESS_VET_TIMEOUT_MS = 500
/** How long a submission-time resolution (or its failure) is reused. */
export const EGRESS_VET_CACHE_MS = 30_000
/** Names whose resolution is kept at once; the oldest goes first. */
export const EGRESS_VET_CACHE_SIZE = 1_000

export type EgressVetting =
  | {
      ok: true
      /** The name did not resolve in time: it is checked when the platform connects. */
      deferred: boolean
    }
  | { ok: false; rule: EgressRule; problem: string }

export type EgressDestination =
  | {
      ok: true
      target: EgressTarget
      /** Every address the host resolved to, each checked; connect to these and nothing else. */
      addresses: Array<{ address: string; family: 4 | 6 }>
    }
  | {
      ok: false
      failure: 'refused' | 'unresolved'
      rule?: EgressRule
      /** For the operator's log: names the address. Never shown to the user. */
      detail: string
    }

type Resolution = { addresses: IpAddress[] } | { unresolved: string }

interface CacheEntry {
  expires: number
  resolution: Promise<Resolution>
}

export interface EgressGuardDeps {
  policy: EgressPolicy
  resolve: HostResolver
  clock: Clock
  /** The setting that lets internal destinations through, named in refusals. */
  settingName: string
  vetTimeoutMs?: number
  cacheMs?: number
}

const asError = (error: unknown) =>
  error instanceof Error
    ? `${(error as NodeJS.ErrnoException).code ?? error.name}: ${error.message}`
    : String(error)

export class EgressGuard {
  private readonly cache = new Map<string, CacheEntry>()
  private readonly vetTimeoutMs: number
  private readonly cacheMs: number

  constructor(private readonly deps: EgressGuardDeps) {
    this.vetTimeoutMs = deps.vetTimeoutMs ?? EGRESS_VET_TIMEOUT_MS
    this.cacheMs = deps.cacheMs ?? EGRESS_VET_CACHE_MS
  }

  /**
   * Whether a URL may be accepted, with a problem that names the rule when not. A name that
   * does not resolve within EGRESS_VET_TIMEOUT_MS (or not at all) is accepted: it may resolve
   * later, and `destination` checks it again before anything is sent.
   */
  async vet(raw: string): Promise<EgressVetting> {
    const parsed = parseTarget(raw)
    if ('refusal' in parsed) return this.refused({ host: raw }, parsed.refusal)
    const { target } = parsed
    const refusal = await this.vetTarget(target)
    return refusal ? this.refused(target, refusal) : { ok: true, deferred: refusal === null }
  }

  /**
   * Where to connect for `raw`, resolved now (never from the submission's cache: a name may
   * resolve elsewhere by now). Every address the name resolves to must pass: a name with one
   * internal address among public ones is refused whole, as DNS rebinding answers look.
   */
  async destination(raw: string, signal?: AbortSignal): Promise<EgressDestination> {
    const parsed = parseTarget(raw)
    if ('refusal' in parsed) {
      return { ok: false, failure: 'refused', rule: 'scheme', detail: parsed.refusal.reason }
    }
    const { target } = parsed
    const policy = this.deps.policy
    let addresses: IpAddress[]
    if (target.ip) addresses = [target.ip]
    else {
      const byName = policy.checkName(target.host)
      if (byName) return this.refusedDestination(target, byName)
      const resolution = await this.resolve(target.host, signal)
      if ('unresolved' in resolution) {
        return {
          ok: false,
          failure: 'unresolved',
          detail: `${target.host}: ${resolution.unresolved}`,
        }
      }
      addresses = resolution.addresses
    }
    for (const ip of addresses) {
      const refusal = policy.checkAddress(ip, target.port, target.host)
      if (refusal) return this.refusedDestination(target, refusal, ip)
    }
    return {
      ok: true,
      target,
      addresses: addresses.map((ip) => ({ address: formatIp(ip), family: ip.family })),
    }
  }

  /** A refusal, undefined when allowed, null when the name could not be checked yet. */
  private async vetTarget(target: EgressTarget): Promise<EgressRefusal | undefined | null> {
    const policy = this.deps.policy
    if (target.ip) return policy.checkAddress(target.ip, target.port, target.host)
    const byName = policy.checkName(target.host)
    if (byName) return byName
    const resolution = await this.cachedWithin(target.host, this.vetTimeoutMs)
    if (resolution === undefined || 'unresolved' in resolution) return null
    for (const ip of resolution.addresses) {
      const refusal = policy.checkAddress(ip, target.port, target.host)
      if (refusal) return refusal
    }
    return undefined
  }

  private refused(
    target: Pick<EgressTarget, 'host' | 'ip'>,
    refusal: EgressRefusal,
  ): EgressVetting {
    return {
      ok: false,
      rule: refusal.rule,
      problem: describeRefusal(target, refusal, this.deps.settingName),
    }
  }

  private refusedDestination(
    target: EgressTarget,
    refusal: EgressRefusal,
    ip?: IpAddress,
  ): EgressDestination {
    const address = ip && !target.ip ? ` (${formatIp(ip)})` : ''
    return {
      ok: false,
      failure: 'refused',
      rule: refusal.rule,
      detail: `${target.host}${address} is ${refusal.reason}`,
    }
  }

  /** The cached resolution of `host`, waiting at most `timeoutMs` for a new one. */
  private async cachedWithin(host: string, timeoutMs: number): Promise<Resolution | undefined> {
    const now = this.deps.clock.now().getTime()
    let entry = this.cache.get(host)
    if (entry === undefined || entry.expires <= now) {
      entry = { expires: now + this.cacheMs, resolution: this.resolve(host) }
      this.cache.delete(host)
      this.cache.set(host, entry)
      for (const oldest of this.cache.keys()) {
        if (this.cache.size <= EGRESS_VET_CACHE_SIZE) break
        this.cache.delete(oldest)
      }
    }
    let timer: NodeJS.Timeout | undefined
    // The resolution goes on after the timeout and fills the cache for the next submission.
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs)
    })
    try {
      return await Promise.race([entry.resolution, late])
    } finally {
      clearTimeout(timer)
    }
  }

  private async resolve(host: string, signal?: AbortSignal): Promise<Resolution> {
    const answer = this.deps.resolve(host).then(
      (found): Resolution => {
        const addresses = found.map(parseIp).filter((ip): ip is IpAddress => ip !== undefined)
        return addresses.length > 0 ? { addresses } : { unresolved: 'no address' }
      },
      (error: unknown): Resolution => ({ unresolved: asError(error) }),
    )
    if (signal === undefined) return answer
    if (signal.aborted) return { unresolved: 'aborted' }
    let onAbort: (() => void) | undefined
    const aborted = new Promise<Resolution>((resolve) => {
      onAbort = () => resolve({ unresolved: 'aborted' })
      signal.addEventListener('abort', onAbort, { once: true })
    })
    try {
      return await Promise.race([answer, aborted])
    } finally {
      signal.removeEventListener('abort', onAbort!)
    }
  }
}
