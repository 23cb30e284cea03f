import type { EndpointScaling, EndpointWorkers } from './endpoint.js'

/**
 * The autoscaler's decision for one endpoint, as a pure function of what it sees
 * (docs/serverless-workers.md, "Scaling"). The reconcile loop (control/worker-autoscaler.ts)
 * gathers the inputs, acts on the decision and logs its reasons.
 */

/** Where a managed worker is in its life, as the autoscaler sees it. */
export type ScalingWorkerState =
  /** Wanted, but no host had room yet (THROTTLED). */
  | 'PENDING'
  /** Placed and launched; has not polled for a job yet (INITIALIZING). */
  | 'STARTING'
  | 'IDLE'
  | 'RUNNING'
  | 'UNHEALTHY'

export interface ScalingWorker {
  id: string
  state: ScalingWorkerState
  /**
   * Why it must be replaced once free (started from an older endpoint version, or with a
   * rotated worker key), or null when it is current.
   */
  stale: string | null
  /** Since when it has had no job (ms), for IDLE workers. */
  idleSinceMs: number | null
  /** It asked to be recycled after its job (`stopPod`, runpod-python's refresh_worker). */
  recycle: boolean
  /**
   * Why it is moved off its host (the host is draining), or null/absent: it is replaced
   * elsewhere, and stopped once free and once the endpoint has its target of workers placed
   * elsewhere (docs/serverless-workers.md, "Draining a host").
   */
  leaving?: string | null
}

export interface ScalingQueue {
  /** Queued jobs that may cause a scale-up (not lowPriority). */
  queued: number
  /** When the oldest of those was submitted (ms), or null when there is none. */
  oldestQueuedAtMs: number | null
  /** Jobs a worker runs now, any priority. */
  inProgress: number
}

export interface ScalingInput {
  workers: EndpointWorkers
  scaling: EndpointScaling
  queue: ScalingQueue
  current: readonly ScalingWorker[]
  nowMs: number
  /**
   * The endpoint's workers have been failing (start-backoff.ts): no worker is started before
   * `untilMs`; `why` says so in the decision's reasons.
   */
  backoff?: { untilMs: number; why: string } | null
}

export interface ScalingDecision {
  /** How many new workers to start. */
  start: number
  /** Workers to stop now, each with why. */
  stop: Array<{ workerId: string; reason: string }>
  /**
   * Leaving workers whose replacements are placed: they take no new job from now on, and are
   * stopped once free (those free now are in `stop` too).
   */
  replaced: string[]
  /** Why the decision is what it is, for the log; empty when nothing changes. */
  reasons: string[]
}

const isUsable = (w: ScalingWorker) =>
  w.stale === null &&
  !w.recycle &&
  !w.leaving &&
  (w.state === 'PENDING' || w.state === 'STARTING' || w.state === 'IDLE' || w.state === 'RUNNING')

/** How many workers the endpoint wants by its scaler, before the min/max clamp. */
function wanted(input: ScalingInput, usable: readonly ScalingWorker[]): [number, string] {
  const { scaling, queue, nowMs } = input
  if (scaling.type === 'REQUEST_COUNT') {
    const target = Math.ceil((queue.queued + queue.inProgress) / scaling.requestCount)
    return [
      target,
      `REQUEST_COUNT: ${queue.queued} queued + ${queue.inProgress} in progress at ${scaling.requestCount} per worker wants ${target}`,
    ]
  }
  if (queue.queued > 0 && usable.length === 0) {
    // From zero: waiting out the threshold when nothing can run the job only adds latency. The
    // threshold governs adding workers beside ones that exist (our rule, the spec names none).
    return [1, `QUEUE_DELAY: ${queue.queued} queued and no worker to run them`]
  }
  const waitedMs = queue.oldestQueuedAtMs === null ? 0 : nowMs - queue.oldestQueuedAtMs
  const arriving = usable.some((w) => w.state === 'PENDING' || w.state === 'STARTING')
  if (waitedMs > scaling.queueDelay * 1000 && !arriving) {
    return [
      usable.length + 1,
      `QUEUE_DELAY: the oldest queued job has waited ${(waitedMs / 1000).toFixed(1)} s > ${scaling.queueDelay} s`,
    ]
  }
  // Keep every worker that works or is starting; idle ones go by idleTimeout, throttled ones at once.
  const busy = usable.filter((w) => w.state === 'RUNNING' || w.state === 'STARTING').length
  const needed = queue.queued > 0 ? usable.length : busy
  return [needed, '']
}

export function decideScaling(input: ScalingInput): ScalingDecision {
  const { workers, current, nowMs } = input
  const stop: ScalingDecision['stop'] = []

  for (const w of current) {
    const free = w.state === 'IDLE' || w.state === 'PENDING' || w.state === 'STARTING'
    if (w.recycle && w.state === 'IDLE') {
      stop.push({ workerId: w.id, reason: 'recycled after its job (stopPod)' })
    } else if (w.stale !== null && free) {
      stop.push({ workerId: w.id, reason: w.stale })
    }
  }

  const usable = current.filter(isUsable)
  const [byScaler, why] = wanted(input, usable)
  const target = Math.min(workers.max, Math.max(workers.min, byScaler))
  // A leaving worker is replaced once the workers that take its place are placed (not merely
  // wanted): until then it keeps serving, so that a drain never leaves the endpoint without
  // workers; from then on it takes no new job, and goes once free.
  const placed = usable.filter((w) => w.state !== 'PENDING').length
  const replaced: string[] = []
  for (const w of current) {
    if (!w.leaving || placed < target || stop.some((s) => s.workerId === w.id)) continue
    replaced.push(w.id)
    const free = w.state === 'IDLE' || w.state === 'PENDING' || w.state === 'STARTING'
    if (free) {
      stop.push({
        workerId: w.id,
        reason: `${w.leaving}: ${placed} worker(s) placed elsewhere, target ${target}`,
      })
    }
  }
  const explain = (
    decision: Omit<ScalingDecision, 'reasons' | 'replaced'>,
    extra: string[],
  ): ScalingDecision => ({
    ...decision,
    replaced,
    reasons: [...decision.stop.map((s) => `stop ${s.workerId}: ${s.reason}`), ...extra],
  })

  if (target > usable.length && input.backoff && nowMs < input.backoff.untilMs) {
    return explain({ start: 0, stop }, [
      ...(why === '' ? [] : [why]),
      `start none yet: ${usable.length} usable worker(s), target ${target}; ${input.backoff.why}`,
    ])
  }
  if (target > usable.length) {
    const start = target - usable.length
    return explain({ start, stop }, [
      ...(why === '' ? [] : [why]),
      `start ${start}: ${usable.length} usable worker(s), target ${target} (min ${workers.min}, max ${workers.max})`,
    ])
  }

  // Above target: throttled workers (never placed, nothing runs on them) go first, then idle
  // workers past idleTimeout, the longest idle first.
  let surplus = usable.length - target
  const idleTimeoutMs = workers.idleTimeout * 1000
  const order = (w: ScalingWorker) => (w.state === 'PENDING' ? -1 : (w.idleSinceMs ?? 0))
  const candidates = usable
    .filter(
      (w) =>
        w.state === 'PENDING' ||
        (w.state === 'IDLE' && w.idleSinceMs !== null && nowMs - w.idleSinceMs >= idleTimeoutMs),
    )
    .sort((a, b) => order(a) - order(b))
  for (const w of candidates) {
    if (surplus <= 0) break
    stop.push({
      workerId: w.id,
      reason:
        w.state === 'PENDING'
          ? `no longer wanted (target ${target}) and never placed`
          : `idle for ${workers.idleTimeout} s or more, above the target of ${target}`,
    })
    surplus -= 1
  }
  return explain({ start: 0, stop }, [])
}
