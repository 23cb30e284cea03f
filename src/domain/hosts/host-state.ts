import type { Host } from '../catalog/fleet.js'
import type { HostFacts } from './host-facts.js'
import { offeredHost } from './offered-host.js'

export type { HostFacts, ReportedGpu } from './host-facts.js'

/**
 * What the last probes say of a host: its runtime answers (UP) or not (DOWN); UNKNOWN before
 * its first probe (a remote host is not placed on until it answered once).
 */
export type HostHealth = 'UP' | 'DOWN' | 'UNKNOWN'

/**
 * Whether new pods and workers may be placed on a host: ACTIVE, CORDONED (no new placements)
 * or DRAINING (no new placements, and its serverless workers are being moved off).
 */
export type HostSchedule = 'ACTIVE' | 'CORDONED' | 'DRAINING'

/** A host's state as the store keeps it (migration 0021), shared by every replica. */
export interface HostStateRecord {
  hostId: string
  state: HostHealth
  /** Why it is DOWN (null when UP). */
  reason: string | null
  /** When it entered `state` (ISO). */
  since: string
  /** When it was last probed (ISO); null before the first probe. */
  checkedAt: string | null
  /** From the last probe that answered; null for hosts that run here without an engine. */
  facts: HostFacts | null
  /** Where what the fleet declares and what the host reports disagree. */
  warnings: string[]
  schedule: HostSchedule
}

/** One probe's outcome. */
export type ProbeOutcome = { ok: true; facts: HostFacts | null } | { ok: false; reason: string }

/**
 * The state after a probe. A host goes DOWN only after `failuresBeforeDown` failed probes in
 * a row (one lost SSH handshake is not a lost host), and UP at the first answer. `since`
 * changes only when the state does.
 */
export function nextHostState(
  host: Host,
  previous: HostStateRecord | undefined,
  outcome: ProbeOutcome,
  failuresInARow: number,
  failuresBeforeDown: number,
  now: string,
): Omit<HostStateRecord, 'schedule'> {
  if (outcome.ok) {
    return {
      hostId: host.id,
      state: 'UP',
      reason: null,
      since: previous?.state === 'UP' ? previous.since : now,
      checkedAt: now,
      facts: outcome.facts,
      warnings: declaredVersusReported(host, outcome.facts),
    }
  }
  const down = failuresInARow >= failuresBeforeDown || previous?.state !== 'UP'
  if (!down && previous) return { ...previous, checkedAt: now }
  return {
    hostId: host.id,
    state: 'DOWN',
    reason: outcome.reason,
    since: previous?.state === 'DOWN' ? previous.since : now,
    checkedAt: now,
    facts: previous?.facts ?? null,
    warnings: previous?.warnings ?? [],
  }
}

/**
 * Where the fleet file and the engine disagree, and what the host offers instead
 * (offered-host.ts). Simulated hosts declare GPUs that do not exist, so theirs are not checked.
 */
export function declaredVersusReported(host: Host, facts: HostFacts | null): string[] {
  return offeredHost(host, facts).notes
}

/** Why new pods may not be placed on a host, or undefined when they may. */
export function unplaceableReason(record: HostStateRecord): string | undefined {
  if (record.state === 'UNKNOWN') return 'has not been probed yet'
  if (record.state === 'DOWN') return `is DOWN since ${record.since}: ${record.reason}`
  if (record.schedule === 'CORDONED') return 'is cordoned'
  if (record.schedule === 'DRAINING') return 'is draining'
  return undefined
}

/** The statusReason of a pod whose host was lost; hostLostAt reads it back. */
export function hostLostReason(hostId: string, since: string, why: string | null): string {
  return `host ${hostId} lost at ${since}${why ? ` (${why})` : ''}`
}

/** When the pod's host was lost, if its statusReason says it was (hostLostReason). */
export function hostLostAt(statusReason: string | null, hostId: string | null): string | undefined {
  if (!statusReason || !hostId) return undefined
  const prefix = `host ${hostId} lost at `
  if (!statusReason.startsWith(prefix)) return undefined
  return statusReason.slice(prefix.length).split(' ')[0]
}
