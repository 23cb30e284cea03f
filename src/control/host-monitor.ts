import type { Logger } from 'pino'
import type { Host } from '../domain/catalog/fleet.js'
import type { HostBoard } from '../domain/hosts/host-board.js'
import {
  nextHostState,
  type HostStateRecord,
  type ProbeOutcome,
} from '../domain/hosts/host-state.js'
import type { HostRuntime } from '../runtime/host-runtime.js'
import type { Clock } from '../shared/clock.js'

export interface HostMonitorOptions {
  hosts: readonly Host[]
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
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private readonly failures = new Map<string, number>()

  constructor(private readonly options: HostMonitorOptions) {}

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => this.nudge(), this.options.intervalMs)
    this.timer.unref()
    this.nudge()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    await this.running
  }

  private nudge(): void {
    if (this.running) return
    this.running = this.probeAll()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error }, 'probing the hosts failed'),
      )
      .finally(() => (this.running = undefined))
  }

  /**
   * One probe of every host; exposed so tests can step it. Hosts whose runtimes share one probe
   * (every host the process driver runs here) are probed once: the answer is the same machine's.
   */
  async probeAll(): Promise<void> {
    const probes = new Map<HostRuntime['probe'], Promise<ProbeOutcome>>()
    await Promise.all(
      this.options.hosts.map((host) => {
        const runtime = this.options.runtimeOf(host.id)
        let outcome = probes.get(runtime.probe)
        if (!outcome) {
          outcome = this.probe(runtime)
          probes.set(runtime.probe, outcome)
        }
        return this.probeHost(host, outcome)
      }),
    )
  }

  private async probeHost(host: Host, probed: Promise<ProbeOutcome>): Promise<void> {
    const { board, clock, logger } = this.options
    const outcome = await probed
    const failures = outcome.ok ? 0 : (this.failures.get(host.id) ?? 0) + 1
    this.failures.set(host.id, failures)
    const previous = board.state(host.id)
    const stored = previous?.checkedAt === null ? undefined : previous
    const next = nextHostState(
      host,
      stored,
      outcome,
      failures,
      this.options.failuresBeforeDown,
      clock.now().toISOString(),
    )
    await board.saveProbe(next)
    if (previous?.state !== next.state) {
      const log = next.state === 'UP' ? logger.info.bind(logger) : logger.warn.bind(logger)
      log({ hostId: host.id, state: next.state, reason: next.reason }, `host ${next.state}`)
      this.options.onChange?.(host.id, next.state)
    }
    const warned = previous?.warnings.join('\n')
    if (next.warnings.length > 0 && warned !== next.warnings.join('\n'))
      logger.warn({ hostId: host.id, warnings: next.warnings }, 'host differs from the fleet file')
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
          cpus: facts.cpus,
          memoryGb: Math.round((facts.memoryBytes / GB) * 10) / 10,
          serverVersion: facts.serverVersion,
          runtimes: facts.runtimes,
        },
      }
    } catch (error) {
      return { ok: false, reason: `${runtime.where}: ${(error as Error).message}` }
    } finally {
      clearTimeout(timer)
    }
  }
}
