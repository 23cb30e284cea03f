import type { Logger } from 'pino'
import type { Host } from '../domain/catalog/fleet.js'
import { CHECKED_AT_WRITE_INTERVAL_MS, type HostBoard } from '../domain/hosts/host-board.js'
import { engineTwins } from '../domain/hosts/host-twins.js'
import {
  nextHostState,
  type HostStateRecord,
  type ProbeOutcome,
} from '../domain/hosts/host-state.js'
import type { HostRuntime } from '../runtime/host-runtime.js'
import type { Clock, TimerClock } from '../shared/clock.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'

export interface HostMonitorOptions {
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
  /** The fleet's hosts now (hosts are added and removed at runtime). */
  hosts: () => readonly Host[]
  runtimeOf: (hostId: string) => HostRuntime
  board: HostBoard
  clock: Clock
  logger: Logger
  intervalMs: number
  /** A probe that has not answered by then failed (a host cut off the network hangs). */
  timeoutMs: number
  failuresBeforeDown: number
  /** Told after a host changed state (UP <-> DOWN): the pod lifecycle reacts at once. */
  onChange?: (hostId: string, state: HostStateRecord['state']) => void
}

const GB = 1024 ** 3

/**
 * The leader's probe of every host (docs/fleet.md, "Host state"): each `intervalMs` it pings
 * each host's engine and reads its /info, in parallel, and writes UP or DOWN (with the reason
 * and since when) to the store through the board.
 */
export class HostMonitor {
  private readonly loop: ReconcileLoop
  private readonly failures = new Map<string, number>()
  /** Each probe's last answer, and when its hosts' records were last refreshed from it. */
  private readonly lastOutcomes = new Map<
    HostRuntime['probe'],
    { said: string; refreshedAt: number }
  >()
  /** Probes with a host failing or not UP at the last round: their hosts are all looked at. */
  private readonly failing = new Set<HostRuntime['probe']>()

  constructor(private readonly options: HostMonitorOptions) {
    this.loop = new ReconcileLoop({
      clock: options.timers,
      pass: () => this.probeAll(),
      intervalMs: options.intervalMs,
      onError: (error) => options.logger.error({ err: error }, 'probing the hosts failed'),
    })
  }

  start(): void {
    this.loop.start({ immediate: true })
  }

  async stop(): Promise<void> {
    await this.loop.stop()
  }

  /**
   * One probe of every host; exposed so tests can step it. Hosts whose runtimes share one probe
   * (every host the process driver runs here) are probed once: the answer is the same machine's.
   * The results are saved together.
   */
  async probeAll(): Promise<void> {
    const probes = new Map<HostRuntime['probe'], Promise<ProbeOutcome>>()
    const hosts = this.options.hosts()
    // A host removed at runtime takes its failure count with it: added again, it counts afresh.
    const listed = new Set(hosts.map((h) => h.id))
    for (const id of [...this.failures.keys()]) if (!listed.has(id)) this.failures.delete(id)
    const outcomes = await Promise.all(
      hosts.map((host) => {
        const runtime = this.options.runtimeOf(host.id)
        let outcome = probes.get(runtime.probe)
        if (!outcome) {
          outcome = this.probe(runtime)
          probes.set(runtime.probe, outcome)
        }
        return outcome
      }),
    )
    // Probes of engines no host uses any more are forgotten.
    for (const probe of [...this.lastOutcomes.keys()])
      if (!probes.has(probe)) this.lastOutcomes.delete(probe)
    const { board, clock } = this.options
    const nowMs = clock.now().getTime()
    const now = new Date(nowMs).toISOString()
    // A probe that answered as last time, for hosts none of which is failing: their records
    // stand (their probe time is refreshed once a minute), however many hosts share it.
    const unchanged = new Set<HostRuntime['probe']>()
    for (const [probe, outcome] of probes) {
      const said = JSON.stringify(await outcome)
      const last = this.lastOutcomes.get(probe)
      if (
        last?.said === said &&
        nowMs - last.refreshedAt < CHECKED_AT_WRITE_INTERVAL_MS &&
        !this.failing.has(probe)
      ) {
        unchanged.add(probe)
      } else this.lastOutcomes.set(probe, { said, refreshedAt: nowMs })
    }
    // A second real host on one engine is DOWN at once, with the other's name (host-twins.ts).
    const twins = engineTwins(hosts, outcomes, (hostId) => board.state(hostId))
    const changes: Array<{ previous: HostStateRecord | undefined; next: HostStateRecord }> = []
    const records: Array<Omit<HostStateRecord, 'schedule'>> = []
    this.failing.clear()
    hosts.forEach((host, i) => {
      const probe = this.options.runtimeOf(host.id).probe
      const twin = twins.get(host.id)
      if (unchanged.has(probe) && twin === undefined) return
      const outcome: ProbeOutcome = twin === undefined ? outcomes[i]! : { ok: false, reason: twin }
      let failures = outcome.ok ? 0 : (this.failures.get(host.id) ?? 0) + 1
      if (twin !== undefined) failures = Math.max(failures, this.options.failuresBeforeDown)
      if (failures > 0 || this.failures.has(host.id)) this.failures.set(host.id, failures)
      const previous = board.state(host.id)
      const stored = previous?.checkedAt === null ? undefined : previous
      const next = nextHostState(
        host,
        stored,
        outcome,
        failures,
        this.options.failuresBeforeDown,
        now,
      )
      if (
        previous?.state !== next.state ||
        previous.warnings.join('\n') !== next.warnings.join('\n')
      )
        changes.push({ previous, next: { ...next, schedule: previous?.schedule ?? 'ACTIVE' } })
      if (failures > 0 || next.state !== 'UP') this.failing.add(probe)
      records.push(next)
    })
    await board.saveProbes(records)
    for (const { previous, next } of changes) this.report(previous, next)
  }

  private report(previous: HostStateRecord | undefined, next: HostStateRecord): void {
    const { logger } = this.options
    if (previous?.state !== next.state) {
      const log = next.state === 'UP' ? logger.info.bind(logger) : logger.warn.bind(logger)
      log({ hostId: next.hostId, state: next.state, reason: next.reason }, `host ${next.state}`)
      this.options.onChange?.(next.hostId, next.state)
    }
    const warned = previous?.warnings.join('\n')
    if (next.warnings.length > 0 && warned !== next.warnings.join('\n'))
      logger.warn(
        { hostId: next.hostId, warnings: next.warnings },
        'host differs from the fleet file',
      )
  }

  private async probe(runtime: HostRuntime): Promise<ProbeOutcome> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${this.options.timeoutMs} ms`)),
        this.options.timeoutMs,
      )
    })
    try {
      const facts = await Promise.race([runtime.probe(), timeout])
      return {
        ok: true,
        facts: facts && {
          name: facts.name,
          ...(facts.engineId ? { engineId: facts.engineId } : {}),
          cpus: facts.cpus,
          memoryGb: Math.round((facts.memoryBytes / GB) * 10) / 10,
          serverVersion: facts.serverVersion,
          runtimes: facts.runtimes,
          unenforced: facts.unenforced,
          ...(facts.gpus ? { gpus: facts.gpus, cudaVersion: facts.cudaVersion ?? null } : {}),
          ...(facts.gpuProbeError !== undefined ? { gpuProbeError: facts.gpuProbeError } : {}),
        },
      }
    } catch (error) {
      return { ok: false, reason: `${runtime.where}: ${(error as Error).message}` }
    } finally {
      clearTimeout(timer)
    }
  }
}
