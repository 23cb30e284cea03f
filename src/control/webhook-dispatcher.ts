import { performance } from 'node:perf_hooks'
import type { Logger } from 'pino'
import {
  afterAttempt,
  attemptOutcome,
  DEFAULT_WEBHOOK_RETRY_DELAY_MS,
  DEFAULT_WEBHOOK_TIMEOUT_MS,
  WEBHOOK_RECORD_RETENTION_MS,
  type ClaimedWebhook,
  type WebhookDeliveryRepo,
  type WebhookSendResult,
  WEBHOOK_ERRORS,
} from '../domain/serverless/webhook-delivery.js'
import type { EgressGuard } from '../domain/egress/egress-guard.js'
import type { Clock, TimerClock } from '../shared/clock.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import { pinnedRequest } from '../shared/pinned-request.js'

/** How often the store is asked for due deliveries when nothing nudges (other replicas' jobs). */
export const WEBHOOK_POLL_INTERVAL_MS = 1_000
/** Deliveries sent at once by one dispatcher; more wait for a free slot. */
export const WEBHOOK_MAX_IN_FLIGHT = 16
/**
 * A claim lasts the attempt's timeout plus this: long enough that an attempt in progress is
 * never claimed twice, short enough that one orphaned by a crash is retried soon after restart.
 */
export const WEBHOOK_CLAIM_MARGIN_MS = 30_000
const PURGE_INTERVAL_MS = 60_000

export type WebhookSender = (
  url: string,
  body: string,
  options: { timeoutMs: number; signal: AbortSignal },
) => Promise<WebhookSendResult | { aborted: true }>

/**
 * POSTs the payload with Content-Type application/json to the addresses the egress policy
 * checked just now (docs/security.md "Egress policy"). Redirects are not followed (a 3xx is not
 * the 200 the spec asks for, and following one would go where nothing was checked) and the
 * receiver's body is not read. The timeout covers resolving, connecting and the answer.
 */
export function webhookSender(
  egress: Pick<EgressGuard, 'destination'>,
  connect: typeof pinnedRequest = pinnedRequest,
): WebhookSender {
  return async (url, body, { timeoutMs, signal }) => {
    const timeout = AbortSignal.timeout(timeoutMs)
    const either = AbortSignal.any([timeout, signal])
    const destination = await egress.destination(url, either)
    if (signal.aborted) return { aborted: true }
    if (!destination.ok) {
      const error =
        destination.failure === 'refused' ? WEBHOOK_ERRORS.refused : WEBHOOK_ERRORS.unresolved
      const late = timeout.aborted ? ` (no answer within ${timeoutMs} ms)` : ''
      return { error, detail: `${destination.detail}${late}` }
    }
    const { target, addresses } = destination
    const answer = await connect({
      url: target.url,
      host: target.host,
      port: target.port,
      addresses,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'podyard-webhook/1' },
      body,
      signal: either,
    })
    if ('status' in answer) return { httpStatus: answer.status }
    if (signal.aborted) return { aborted: true }
    const detail = timeout.aborted ? `no answer within ${timeoutMs} ms` : answer.detail
    return { error: WEBHOOK_ERRORS.noAnswer, detail: `${target.host}:${target.port}: ${detail}` }
  }
}

export interface WebhookDispatcherDeps {
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
  deliveries: WebhookDeliveryRepo
  clock: Clock
  logger: Pick<Logger, 'info' | 'warn' | 'error'>
  /** Between a failed attempt's end and the next attempt. Default 10 s (spec "Events"). */
  retryDelayMs?: number
  /** How long one attempt waits for an answer. Default 10 s. */
  timeoutMs?: number
  /** How often the store is polled for due deliveries. Default 1 s. */
  intervalMs?: number
  maxInFlight?: number
  /** Where each attempt may connect: the egress policy, applied again at every attempt. */
  egress: Pick<EgressGuard, 'destination'>
  /**
   * Told of each attempt's outcome, for the metrics: `delivered`, `retry` (failed, another
   * attempt follows) or `gave_up` (failed, the last attempt).
   */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'gave_up') => void
}

/**
 * The webhook dispatcher (docs/job-api.md "Webhooks"): a reconcile loop over the stored
 * deliveries. The job queue writes a pending delivery in the same transaction as a job's terminal
 * transition and nudges this loop; the loop claims due deliveries, POSTs each (never holding up
 * the job, which is already terminal), and records every attempt with its HTTP status or the
 * class of its error (the details are logged). Each attempt checks the URL against the egress
 * policy again, since a name may resolve elsewhere by now.
 * Runs on the leading replica (docs/production.md), nudged by the others when their jobs queue
 * deliveries; claims keep two dispatchers from sending one delivery at once.
 * Delivery is at least once: an attempt cut short by a crash is made again.
 */
export class WebhookDispatcher {
  private readonly retryDelayMs: number
  private readonly timeoutMs: number
  private readonly intervalMs: number
  private readonly maxInFlight: number
  private readonly send: WebhookSender
  private readonly inFlight = new Set<Promise<void>>()
  private abort = new AbortController()
  private readonly loop: ReconcileLoop
  private lastPurge = 0

  constructor(private readonly deps: WebhookDispatcherDeps) {
    this.retryDelayMs = deps.retryDelayMs ?? DEFAULT_WEBHOOK_RETRY_DELAY_MS
    this.timeoutMs = deps.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS
    this.intervalMs = deps.intervalMs ?? WEBHOOK_POLL_INTERVAL_MS
    this.maxInFlight = deps.maxInFlight ?? WEBHOOK_MAX_IN_FLIGHT
    this.send = webhookSender(deps.egress)
    this.loop = new ReconcileLoop({
      clock: deps.timers,
      pass: async () => void (await this.claimAndSend()),
      intervalMs: this.intervalMs,
      onError: (error) => deps.logger.error({ err: error }, 'webhook pass failed'),
    })
  }

  start(): void {
    if (this.loop.running) return
    this.abort = new AbortController()
    this.loop.start({ immediate: true })
  }

  /**
   * Stops the loop and cuts off attempts in progress; their claims are given back, so the next
   * start (of this server or another replica) sends them at once.
   */
  async stop(): Promise<void> {
    this.abort.abort()
    await this.loop.stop()
    await Promise.all([...this.inFlight])
  }

  /** Something may be due now (a job with a webhook just finished in this process). */
  nudge(): void {
    this.loop.nudge()
  }

  /**
   * One pass for tests: claims what is due now (as many as there is room for) and resolves when
   * those attempts are recorded. Returns how many were attempted.
   */
  async dispatch(): Promise<number> {
    const started = await this.claimAndSend()
    await Promise.all(started)
    return started.length
  }

  private async claimAndSend(): Promise<Array<Promise<void>>> {
    const room = this.maxInFlight - this.inFlight.size
    if (room <= 0) return []
    const now = this.deps.clock.now()
    await this.purgeOld(now)
    const due = await this.deps.deliveries.claimDue(
      now,
      room,
      this.timeoutMs + WEBHOOK_CLAIM_MARGIN_MS,
    )
    return due.map((delivery) => {
      const attempt = this.attempt(delivery)
        .catch((error: unknown) =>
          this.deps.logger.error({ err: error, delivery: delivery.id }, 'webhook attempt failed'),
        )
        .finally(() => {
          this.inFlight.delete(attempt)
          // A slot is free: anything left waiting for one goes now.
          if (due.length === room) this.nudge()
        })
      this.inFlight.add(attempt)
      return attempt
    })
  }

  private async attempt(delivery: ClaimedWebhook): Promise<void> {
    const number = delivery.attemptsMade + 1
    const at = this.deps.clock.now()
    const started = performance.now()
    const result = await this.send(delivery.url, delivery.payload, {
      timeoutMs: this.timeoutMs,
      signal: this.abort.signal,
    })
    const durationMs = performance.now() - started
    if ('aborted' in result) {
      await this.deps.deliveries.release(delivery.id, this.deps.clock.now())
      return
    }
    const outcome = attemptOutcome(result)
    const endedAt = this.deps.clock.now().getTime()
    // The store keeps what the account may read; the detail is for the log only.
    const shown = 'httpStatus' in result ? result : { error: result.error }
    const next = afterAttempt(number, outcome, endedAt, this.retryDelayMs)
    this.deps.onAttempt?.(
      next.status === 'delivered' ? 'delivered' : next.status === 'failed' ? 'gave_up' : 'retry',
    )
    const recorded = await this.deps.deliveries.recordAttempt(
      delivery.id,
      {
        attempt: number,
        at: at.toISOString(),
        durationMs,
        ...shown,
        outcome,
      },
      {
        status: next.status,
        nextAttemptAt:
          next.nextAttemptAt === null ? null : new Date(next.nextAttemptAt).toISOString(),
        finishedAt: next.status === 'pending' ? null : new Date(endedAt).toISOString(),
      },
    )
    const fields = {
      delivery: delivery.id,
      job: delivery.jobId,
      attempt: number,
      ...result,
      status: next.status,
    }
    if (!recorded) this.deps.logger.warn(fields, 'webhook attempt already recorded elsewhere')
    else if (next.status === 'failed') this.deps.logger.warn(fields, 'webhook delivery gave up')
    else this.deps.logger.info(fields, 'webhook attempt')
    // The retry goes when due rather than at the next poll (which still finds it otherwise).
    if (next.status === 'pending') this.loop.wakeIn(this.retryDelayMs)
  }

  private async purgeOld(now: Date): Promise<void> {
    if (now.getTime() - this.lastPurge < PURGE_INTERVAL_MS) return
    this.lastPurge = now.getTime()
    await this.deps.deliveries.purgeFinished(new Date(now.getTime() - WEBHOOK_RECORD_RETENTION_MS))
  }
}
