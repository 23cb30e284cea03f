/**
 * The leader lease of several server replicas on one database (docs/production.md): the
 * replica holding the lease runs the reconcile loops; the others serve the API only.
 */
export interface LeaseRepo {
  /**
   * Takes the lease `name` for `holder` until `nowMs + ttlMs` when it is free, expired or
   * already the holder's (a renewal). True when `holder` holds it afterwards.
   */
  tryAcquire(name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean>
  /** Gives the lease up at once when `holder` holds it (a clean shutdown). */
  release(name: string, holder: string): Promise<void>
  /** Who holds the lease now, or undefined when nobody does (free or expired). */
  holder(name: string, nowMs: number): Promise<string | undefined>
}

/** The lease of the reconcile loops. */
export const LOOPS_LEASE = 'reconcile-loops'

/**
 * Default lease time. A leader that cannot renew for this long stops its loops, and another
 * replica takes over within about this plus one renewal interval after the leader died.
 */
export const DEFAULT_LEASE_TTL_MS = 15_000

/** Renewals (and a follower's attempts) per lease time: a missed renewal or two is survived. */
export const LEASE_RENEWALS_PER_TTL = 3
