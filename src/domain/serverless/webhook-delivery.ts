/**
 * Webhook deliveries (spec "Events"; docs/job-api.md "Webhooks"): when a job with a `webhook`
 * reaches a terminal status, the job's `/status` body is POSTed to that URL. Only HTTP 200
 * counts as delivered; otherwise it is tried again, up to 2 more times, 10 s apart.
 */
import type { JobStatus } from './job.js'

/** The first attempt and the spec's "up to 2 more times". */
export const WEBHOOK_MAX_ATTEMPTS = 3
/** Spec "Events": retries come 10 seconds apart (configurable: `webhooks.retryDelayMs`). */
export const DEFAULT_WEBHOOK_RETRY_DELAY_MS = 10_000
/** How long one attempt waits for the receiver's answer (configurable: `webhooks.timeoutMs`). */
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000
/** Finished deliveries (delivered or failed) stay readable this long, then are deleted. */
export const WEBHOOK_RECORD_RETENTION_MS = 24 * 60 * 60 * 1000
/** The only answer that counts as delivered (spec "Events": "must answer with status 200"). */
export const WEBHOOK_DELIVERED_STATUS = 200

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed'

/**
 * Why an attempt got no HTTP answer, as the job's account sees it: a class, never the details
 * (the address, the socket error, how long it took). Attempts readable by the account must not
 * tell a closed port from a filtered one, nor say what a name resolved to: otherwise webhooks
 * are a port scanner and DNS oracle for the operator's network (docs/security.md). The details
 * go to the server's log.
 */
export const WEBHOOK_ERRORS = {
  /** The egress policy refused the URL or an address its host resolved to. */
  refused: 'refused by the egress policy',
  /** The host name did not resolve (or not within the attempt's timeout). */
  unresolved: 'host name did not resolve',
  /** Connection refused, reset or timed out, TLS failure, or no answer within the timeout. */
  noAnswer: 'no HTTP answer',
} as const

export type WebhookError = (typeof WEBHOOK_ERRORS)[keyof typeof WEBHOOK_ERRORS]

/**
 * What one POST gave: the receiver's HTTP status, or the class of why there was none with the
 * details for the log.
 */
export type WebhookSendResult = { httpStatus: number } | { error: WebhookError; detail: string }

export interface WebhookAttempt {
  /** 1, 2, 3. */
  attempt: number
  /** When the POST started. */
  at: string
  durationMs: number
  httpStatus?: number
  /** Why there was no HTTP answer: one of WEBHOOK_ERRORS (older rows may hold details). */
  error?: string
  outcome: 'delivered' | 'failed'
}

export interface WebhookDelivery {
  id: number
  jobId: string
  endpointId: string
  accountId: string
  url: string
  /** The terminal status that caused the delivery (a retried job may finish, and notify, again). */
  jobStatus: JobStatus
  status: WebhookDeliveryStatus
  createdAt: string
  /** While pending: when the next attempt is due. */
  nextAttemptAt?: string
  /** When it was delivered or given up. */
  finishedAt?: string
  attempts: WebhookAttempt[]
}

/**
 * An attempt as the job's account reads it: the receiver's status and how long it took only
 * when a receiver the policy allowed answered; otherwise only the class of the failure.
 */
export type WebhookAttemptView = Pick<WebhookAttempt, 'attempt' | 'at' | 'outcome'> &
  ({ httpStatus: number; durationMs: number } | { error: WebhookError })

export type WebhookDeliveryView = Omit<WebhookDelivery, 'accountId' | 'attempts'> & {
  attempts: WebhookAttemptView[]
}

const KNOWN_ERRORS: readonly string[] = Object.values(WEBHOOK_ERRORS)

export function attemptView(attempt: WebhookAttempt): WebhookAttemptView {
  const { attempt: number, at, outcome } = attempt
  if (attempt.httpStatus !== undefined) {
    return {
      attempt: number,
      at,
      outcome,
      httpStatus: attempt.httpStatus,
      durationMs: Math.max(0, Math.round(attempt.durationMs)),
    }
  }
  // Rows recorded before the classes existed held the socket error: never shown as such.
  const error = KNOWN_ERRORS.includes(attempt.error ?? '')
    ? (attempt.error as WebhookError)
    : WEBHOOK_ERRORS.noAnswer
  return { attempt: number, at, outcome, error }
}

export function deliveryView(delivery: WebhookDelivery): WebhookDeliveryView {
  const { accountId: _owner, attempts, ...rest } = delivery
  return { ...rest, attempts: attempts.map(attemptView) }
}

/** A pending delivery handed to one dispatcher for one attempt. */
export interface ClaimedWebhook {
  id: number
  jobId: string
  url: string
  /** The JSON text to POST: the job's `/status` body when it became terminal. */
  payload: string
  /** Attempts made before this one. */
  attemptsMade: number
}

export function attemptOutcome(result: WebhookSendResult): 'delivered' | 'failed' {
  return 'httpStatus' in result && result.httpStatus === WEBHOOK_DELIVERED_STATUS
    ? 'delivered'
    : 'failed'
}

/**
 * The delivery after its attempt number `attempt` ended at `endedAt` (ms): delivered; failed for
 * good after the last attempt; else pending again `retryDelayMs` after this attempt ended.
 */
export function afterAttempt(
  attempt: number,
  outcome: 'delivered' | 'failed',
  endedAt: number,
  retryDelayMs: number,
): { status: WebhookDeliveryStatus; nextAttemptAt: number | null } {
  if (outcome === 'delivered') return { status: 'delivered', nextAttemptAt: null }
  if (attempt >= WEBHOOK_MAX_ATTEMPTS) return { status: 'failed', nextAttemptAt: null }
  return { status: 'pending', nextAttemptAt: endedAt + retryDelayMs }
}

/**
 * The stored deliveries. Rows are created by the job queue in the same transaction as the
 * job's terminal transition; the dispatcher (src/control/webhook-dispatcher.ts) claims and
 * records attempts; the REST API reads them.
 */
export interface WebhookDeliveryRepo {
  /**
   * Up to `limit` pending deliveries due at `now`, oldest due first, each claimed for `claimMs`
   * (its next attempt moves to now + claimMs) so no other dispatcher, in this replica or
   * another, sends it meanwhile. A dispatcher that dies mid-attempt loses the claim when it
   * runs out, and the attempt is made again.
   */
  claimDue(now: Date, limit: number, claimMs: number): Promise<ClaimedWebhook[]>
  /**
   * Records attempt `attempt.attempt` and the delivery's state after it. Ignored (false) when
   * the delivery is no longer pending or that attempt is already recorded.
   */
  recordAttempt(
    id: number,
    attempt: WebhookAttempt,
    next: {
      status: WebhookDeliveryStatus
      nextAttemptAt: string | null
      finishedAt: string | null
    },
  ): Promise<boolean>
  /** Gives a claim back (the dispatcher is stopping): the delivery is due at `at`. */
  release(id: number, at: Date): Promise<void>
  /** The job's deliveries, oldest first, when the job is the account's on that endpoint. */
  forJob(accountId: string, endpointId: string, jobId: string): Promise<WebhookDelivery[]>
  /** Deletes deliveries that finished at or before `before`; returns how many. */
  purgeFinished(before: Date): Promise<number>
}
