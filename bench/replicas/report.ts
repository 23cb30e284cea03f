/**
 * What bench/replicas prints (bench/README.md, "bench/replicas"): each round's replicas and
 * their shares, and at the end one table per measurement: per replica count the median round's
 * rate, its ratio to one replica, and where the CPU went (the leader's share of the replicas',
 * PostgreSQL's per operation).
 */
import { observerOf, type ReplicaSet } from './replica-set.js'

export const fmt = (n: number, digits = 0) => n.toFixed(digits)
export const percentOfCore = (cpu: number, seconds: number) => `${fmt((100 * cpu) / seconds)}%`

/** A replica's part of a measured phase. */
export interface ReplicaShare {
  number: number
  leads: boolean
  /** Requests of the phase sent through it (creates, or /run). */
  served: number
  cpuSeconds: number
}

/** What a round measured, for one replica count. */
export interface Round {
  replicas: number
  leaderNumber: number
  /** Pods created, or jobs completed. */
  count: number
  perSecond: number
  /** The window the CPU figures are over. */
  seconds: number
  shares: ReplicaShare[]
  postgresCpuSeconds: number
  postgresProcesses: number
  /** The measurement's own figures, already formatted, in the order of its table's columns. */
  extras: string[]
  /** pods: creates not answered 201; jobs: 5xx answers and deadlocks in the replicas' logs. */
  errors: number
}

/** The replicas, which one leads, and where the bench's polls go. */
export function describeReplicas(set: ReplicaSet): void {
  const observer = observerOf(set)
  const names = set.replicas.map(
    (replica) =>
      `${replica.number} ${replica.server.url} (pid ${replica.pid})` +
      `${replica === set.leader ? ` leads as ${set.leaderId}` : ''}` +
      `${replica === observer ? ', answers the polls' : ''}`,
  )
  console.log(`  replicas: ${names.join('; ')}`)
}

/** Each replica's share of a phase: its requests and its CPU over the window. */
export function sharesOf(set: ReplicaSet, perReplica: number[], cpu: number[]): ReplicaShare[] {
  return set.replicas.map((replica, i) => ({
    number: replica.number,
    leads: replica === set.leader,
    served: perReplica[i]!,
    cpuSeconds: cpu[i]!,
  }))
}

const replicasCpuOf = (round: Round) =>
  round.shares.reduce((sum, share) => sum + share.cpuSeconds, 0)

/** Each replica's requests and share of a core, and the CPU per operation. */
export function printShares(round: Round, unit: string): void {
  const shares = round.shares.map(
    (share) =>
      `${share.number}${share.leads ? ' (leader)' : ''} ${share.served} ${unit}, ` +
      `${percentOfCore(share.cpuSeconds, round.seconds)} of a core`,
  )
  console.log(`  per replica (over ${fmt(round.seconds, 2)} s): ${shares.join('; ')}`)
  console.log(
    `  CPU per ${unit.replace(/s$/, '')}: replicas together ` +
      `${fmt((1000 * replicasCpuOf(round)) / round.count, 3)} ms, PostgreSQL ${postgresFigure(round)}`,
  )
}

function postgresFigure(round: Round): string {
  if (round.postgresProcesses === 0) return 'not on this machine'
  const perOperation = (1000 * round.postgresCpuSeconds) / round.count
  return `${fmt(perOperation, 3)} ms (${round.postgresProcesses} processes)`
}

/** The round whose rate is the median of a replica count's rounds. */
function medianRound(rounds: Round[]): Round {
  const sorted = [...rounds].sort((a, b) => a.perSecond - b.perSecond)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

/** The leader's share of the replicas' CPU over the round, beside an even share (1/n). */
function leaderShare(round: Round): string {
  const leader = round.shares.find((share) => share.leads)?.cpuSeconds ?? Number.NaN
  return `${fmt((100 * leader) / replicasCpuOf(round))}% (even ${fmt(100 / round.replicas)}%)`
}

/**
 * One row per replica count: the median round's rate and its ratio to one replica's (or to the
 * fewest replicas measured), every round's rate, the measurement's own columns, the leader's
 * share of the replicas' CPU, the CPU per operation and the errors.
 */
export function printTable(
  what: string,
  unit: string,
  byCount: Map<number, Round[]>,
  extraNames: string[],
): void {
  const counts = [...byCount.keys()]
  if (counts.length === 0) return
  const base = byCount.has(1) ? 1 : Math.min(...counts)
  const baseRate = medianRound(byCount.get(base)!).perSecond
  const rounds = byCount.get(base)!.length
  console.log(
    `\n${what} (median round of ${rounds}; ratio to ${base} replica${base === 1 ? '' : 's'}):`,
  )
  const columns = [
    'replicas',
    'leader',
    unit,
    'ratio',
    'rounds',
    ...extraNames,
    "leader's share of the replicas' CPU",
    "replicas' CPU per op",
    'PostgreSQL CPU per op',
    'errors',
  ]
  console.log(`| ${columns.join(' | ')} |`)
  console.log(`| ${columns.map(() => '---').join(' | ')} |`)
  for (const [count, measured] of byCount) {
    const round = medianRound(measured)
    const cells = [
      String(count),
      `replica ${round.leaderNumber}`,
      fmt(round.perSecond),
      `${fmt(round.perSecond / baseRate, 2)}x`,
      measured.map((r) => fmt(r.perSecond)).join(', '),
      ...round.extras,
      leaderShare(round),
      `${fmt((1000 * replicasCpuOf(round)) / round.count, 3)} ms`,
      postgresFigure(round),
      String(round.errors),
    ]
    console.log(`| ${cells.join(' | ')} |`)
  }
}
