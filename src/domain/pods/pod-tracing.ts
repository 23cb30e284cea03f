import { TRACE_ATTRIBUTES as A, type Tracing } from '../../shared/tracing.js'
import type { Pod, PodStatus } from './pod.js'

/**
 * A pod's spans (docs/production.md, "Tracing"), children of the request that created it (kept
 * with the pod), so that a pod's life reads as one trace: `pod.create` (checked, placed on a
 * host and stored), then one span per status the pod leaves, written when it leaves it, from
 * the time it entered it: `pod.placed` (PROVISIONING: placed, its workload launching),
 * `pod.starting`, `pod.running`, `pod.stopped` (EXITED), `pod.error`; and `pod.terminated`
 * when it is terminated.
 */
const PERIOD: Record<PodStatus, string> = {
  PROVISIONING: 'pod.placed',
  STARTING: 'pod.starting',
  RUNNING: 'pod.running',
  EXITED: 'pod.stopped',
  ERROR: 'pod.error',
  TERMINATED: 'pod.terminated',
}

const attributesOf = (pod: Pod) => ({
  [A.podId]: pod.id,
  [A.hostId]: pod.hostId ?? undefined,
  [A.requestId]: pod.trace?.requestId,
})

export function tracePodCreated(tracing: Tracing, pod: Pod, startTime: number): void {
  const span = tracing.startSpan('pod.create', {
    ...(pod.trace ? { parent: pod.trace.traceparent } : {}),
    startTime,
    attributes: { ...attributesOf(pod), [A.podStatus]: pod.status },
  })
  span.end()
}

/** The span of the status `before` leaves for `after`'s (nothing when it did not change). */
export function tracePodStatus(tracing: Tracing, before: Pod, after: Pod, now: number): void {
  if (before.status === after.status) return
  const parent = after.trace ? { parent: after.trace.traceparent } : {}
  const period = tracing.startSpan(PERIOD[before.status], {
    ...parent,
    startTime: Math.min(Date.parse(before.lastStatusChange), now),
    attributes: {
      ...attributesOf(before),
      [A.podStatus]: before.status,
      [A.podNextStatus]: after.status,
      [A.reason]: after.statusReason ?? undefined,
    },
  })
  if (after.status === 'ERROR') period.fail(after.statusReason ?? 'ERROR')
  period.end(now)
  if (after.status === 'TERMINATED') {
    tracing
      .startSpan(PERIOD.TERMINATED, {
        ...parent,
        startTime: now,
        attributes: { ...attributesOf(after), [A.podStatus]: after.status },
      })
      .end(now)
  }
}
