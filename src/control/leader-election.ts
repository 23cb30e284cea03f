import type { Logger } from 'pino'
import {
  DEFAULT_LEASE_TTL_MS,
  LEASE_RENEWALS_PER_TTL,
  LOOPS_LEASE,
  type LeaseRepo,
} from '../domain/cluster/leader-lease.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import type { TimerClock } from '../shared/clock.js'

/** The share of the lease time a leader gives up before its lease expires (clock skew room). */
export const FENCE_FRACTION = 0.2

export interface LeaderElectionDeps {
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
  /** The stored leases; without them (SQLite: one process) this replica always leads. */
  leases?: LeaseRepo
  replicaId: string
  ttlMs?: number
  logger: Pick<Logger, 'info' | 'warn' | 'error'>
  /** Wall-clock milliseconds; the lease compares the replicas' clocks, never a test clock. */
  now?: () => number
  /** Starts the reconcile loops (a lose waits for it). */
  onLead: () => void | Promise<void>
  /** Stops them; resolves once no pass of theirs is running. */
  onLose: () => Promise<void>
}

/**
 * One replica of the cluster runs the reconcile loops (docs/production.md, "Several
 * replicas"): the one that holds the lease. The holder renews it LEASE_RENEWALS_PER_TTL times
 * per lease time; the others try as often and take it once it has expired, so a leader killed
 * with SIGKILL is replaced within about `ttlMs` plus one interval. A leader that has not
 * renewed for most of the lease time stops its loops before anyone else may start theirs
 * (the fence: the lease it last wrote expires `ttlMs` after the renewal was sent, and it stops
 * FENCE_FRACTION of that earlier), so two replicas run the loops at once only when their
 * clocks disagree by more than that margin, or for the rest of a pass already under way. The
 * loops are written to survive that (docs/production.md lists why).
 */
export class LeaderElection {
  private readonly ttlMs: number
  private readonly now: () => number
  private leading = false
  private stopped = true
  /** Renews or tries to take the lease LEASE_RENEWALS_PER_TTL times per lease time. */
  private readonly renewals: ReconcileLoop
  /** Gives leadership up once the last renewal is too old (checked a few times per renewal). */
  private readonly fencing: ReconcileLoop
  /** Leadership changes, one after the other (start and stop the loops in order). */
  private changes: Promise<void> = Promise.resolve()
  /** This replica must stop leading after this (its last renewal's expiry minus the margin). */
  private validUntil = 0
  private sinceMs: number | undefined

  constructor(private readonly deps: LeaderElectionDeps) {
    this.ttlMs = deps.ttlMs ?? DEFAULT_LEASE_TTL_MS
    this.now = deps.now ?? Date.now
    const intervalMs = Math.max(50, Math.floor(this.ttlMs / LEASE_RENEWALS_PER_TTL))
    const onError = (error: unknown): void =>
      deps.logger.error({ err: error }, 'the leader election failed a pass')
    this.renewals = new ReconcileLoop({
      clock: deps.timers,
      pass: () => this.tryLease(),
      intervalMs,
      onError,
    })
    this.fencing = new ReconcileLoop({
      clock: deps.timers,
      pass: async () => this.fence(),
      intervalMs: Math.max(25, Math.floor(intervalMs / 4)),
      onError,
    })
  }

  get replicaId(): string {
    return this.deps.replicaId
  }

  /** Whether this replica runs the reconcile loops now. */
  isLeader(): boolean {
    return this.leading
  }

  /** Since when it leads (epoch ms), when it does. */
  leadingSince(): number | undefined {
    return this.leading ? this.sinceMs : undefined
  }

  /** Joins the election; resolves after the first attempt (a lone replica leads at once). */
  async start(): Promise<void> {
    if (!this.stopped) return
    this.stopped = false
    if (this.deps.leases === undefined) {
      this.lead()
      await this.changes
      return
    }
    this.renewals.start()
    this.fencing.start()
    await this.renewals.runOnce()
    await this.changes
  }

  /** Leaves the election: stops the loops if it leads and gives the lease up at once. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    await Promise.all([this.renewals.stop(), this.fencing.stop()])
    const wasLeading = this.leading
    if (wasLeading) this.lose('this replica is shutting down')
    await this.changes
    if (wasLeading && this.deps.leases) {
      try {
        await this.deps.leases.release(LOOPS_LEASE, this.deps.replicaId)
      } catch (error) {
        this.deps.logger.warn({ err: error }, 'could not release the leader lease')
      }
    }
  }

  private async tryLease(): Promise<void> {
    const leases = this.deps.leases
    if (leases === undefined) return
    const sentAt = this.now()
    let held: boolean
    try {
      held = await leases.tryAcquire(LOOPS_LEASE, this.deps.replicaId, sentAt, this.ttlMs)
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'could not renew or take the leader lease')
      this.fence()
      return
    }
    if (this.stopped) return
    if (held) {
      this.validUntil = sentAt + Math.floor(this.ttlMs * (1 - FENCE_FRACTION))
      if (!this.leading) this.lead()
      this.fence()
    } else if (this.leading) {
      this.lose('another replica holds the leader lease')
    }
  }

  private fence(): void {
    if (this.leading && this.deps.leases !== undefined && this.now() >= this.validUntil) {
      this.lose('the leader lease could not be renewed in time')
    }
  }

  private lead(): void {
    this.leading = true
    this.sinceMs = this.now()
    this.changes = this.changes.then(async () => {
      if (!this.leading) return
      this.deps.logger.info(
        { replica: this.deps.replicaId },
        'this replica leads the cluster: it runs the reconcile loops',
      )
      try {
        await this.deps.onLead()
      } catch (error) {
        this.deps.logger.error({ err: error }, 'starting the reconcile loops failed')
      }
    })
  }

  private lose(reason: string): void {
    this.leading = false
    this.changes = this.changes.then(async () => {
      this.deps.logger.warn(
        { replica: this.deps.replicaId, reason },
        'this replica no longer leads the cluster: reconcile loops stopped',
      )
      try {
        await this.deps.onLose()
      } catch (error) {
        this.deps.logger.error({ err: error }, 'stopping the reconcile loops failed')
      }
    })
  }
}
