import { AppError } from '../../shared/app-error.js'
import type { Allocation } from '../catalog/capacity.js'
import type { Fleet } from '../catalog/fleet.js'
import type {
  Placement,
  PlacementPolicy,
  PlacementRequest,
  PlacementSnapshot,
} from '../catalog/placement.js'
import type { Pod } from './pod.js'

/**
 * The least bid per GPU-hour a spot pod may make: this fraction of the type's community price
 * (docs/pods.md, "Spot pods"). Half keeps a spot pod cheaper than on-demand without letting
 * near-free pods hold GPUs an on-demand pod would pay for only to be preempted at once.
 */
export const MIN_BID_FRACTION = 0.5

/** What a spot pod's status reason reads once an on-demand pod took its GPUs. */
export const PREEMPTED_REASON = 'preempted'

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000
}

/** The least bid per GPU-hour for a type of this community price (USD per GPU-hour). */
export function minimumBidFor(communityPrice: number): number {
  return round4(communityPrice * MIN_BID_FRACTION)
}

/** USD per GPU-hour; null where the fleet prices no community GPU of the type. */
export function minimumBidOf(fleet: Fleet, gpuTypeId: string): number | null {
  const community = fleet.prices.gpus[gpuTypeId]?.community
  return community === undefined ? null : minimumBidFor(community)
}

/** The spot pod's hourly price: its bid for each of its GPUs. 400 naming the minimum when too low. */
export function spotHourlyPrice(fleet: Fleet, gpuTypeId: string, gpuCount: number, bid: number) {
  const minimum = minimumBidOf(fleet, gpuTypeId)
  if (minimum === null) {
    throw new AppError('RULE_CONFLICT', `${gpuTypeId} has no community price: no spot pod of it`)
  }
  if (!(bid >= minimum)) {
    throw new AppError(
      'RULE_CONFLICT',
      `bidPerGpu ${bid} is below the minimum bid for ${gpuTypeId}, ${minimum} USD per GPU-hour (half its community price; the gpuTypes query's lowestPrice.minimumBidPrice)`,
    )
  }
  return round4(bid * gpuCount)
}

/** Spot pods in the order preemption takes them: lowest bid first, the newest first on a tie. */
export function preemptionOrder(pods: readonly Pod[]): Pod[] {
  return pods
    .filter((pod) => pod.spot !== undefined)
    .sort(
      (a, b) =>
        a.spot!.bidPerGpu - b.spot!.bidPerGpu ||
        b.createdAt.localeCompare(a.createdAt) ||
        b.id.localeCompare(a.id),
    )
}

/**
 * A placement for `request` once some spot pods give up what they hold, and which: the fewest
 * taken in preemption order (lowest bids first), then each dropped again whose GPUs turn out
 * not to be needed. Undefined when even every spot pod's resources would not make room.
 */
export function placeByPreempting(
  place: PlacementPolicy,
  snapshot: Omit<PlacementSnapshot, 'allocations'>,
  allocations: readonly Allocation[],
  request: PlacementRequest,
  spotPods: readonly Pod[],
): { placement: Placement; preempted: Pod[] } | undefined {
  const attempt = (freed: readonly Pod[]) => {
    const ids = new Set(freed.map((pod) => pod.id))
    const left = allocations.filter((a) => !(a.ownerKind === 'pod' && ids.has(a.ownerId)))
    return place({ ...snapshot, allocations: left }, request)
  }
  const order = preemptionOrder(spotPods)
  const taken: Pod[] = []
  let found = false
  for (const pod of order) {
    taken.push(pod)
    if (attempt(taken).ok) {
      found = true
      break
    }
  }
  if (!found) return undefined
  // A low bid on another host may have been taken on the way to the one that made room.
  for (const pod of [...taken].reverse()) {
    const without = taken.filter((p) => p !== pod)
    if (without.length > 0 && attempt(without).ok) taken.splice(taken.indexOf(pod), 1)
  }
  const result = attempt(taken)
  return result.ok ? { placement: result.placement, preempted: taken } : undefined
}
