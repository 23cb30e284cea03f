import { rm } from 'node:fs/promises'
import path from 'node:path'
import type { Pod, PodRuntime } from '../domain/pods/pod.js'
import { TERMINATED_RETENTION_MS } from '../domain/pods/pod-service.js'
import type { PodLogLine, PodLogQuery, PodRuntimeReader } from '../domain/pods/ports.js'
import { canWatchWorkloads, type RuntimeDriver, type WorkloadState } from '../runtime/driver.js'
import { POD_LABEL_GENERATION, POD_LABEL_KIND } from './pod-workload.js'
import { PodReconciler, type NextLook, type PodReconcileDeps } from './pod-reconcile.js'
import { PodRuntimeSampler } from './pod-runtime-sampler.js'
import { DueQueue } from '../shared/due-queue.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import type { TimerClock } from '../shared/clock.js'
import { untilLaunched } from './until-launched.js'

export { HTTP_READY_TIMEOUT_MS, STARTUP_GRACE_MS, STOP_GRACE_MS } from './pod-reconcile.js'

/** Every pod and every workload is looked at this often, whatever happened (a safety net). */
export const FULL_PASS_INTERVAL_MS = 30_000
/** Drivers without watch() (Docker engines) are listed this often, to see what changed. */
const LIST_INTERVAL_MS = 500
/** A driver whose list takes longer is treated as not answering for this pass. */
const LIST_TIMEOUT_MS = 15_000
/** Pods reconciled at once: bounds the memory of a thousand pods terminated together. */
const CONCURRENT_STEPS = 64

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

export interface PodLifecycleDeps extends PodReconcileDeps {
  /** The clock its loop's timers wait on (default: the system clock): a ManualClock drives it. */
  timers?: TimerClock
  drivers: RuntimeDriver[]
  /** Whether every host a driver serves is DOWN: then it is not even asked for its list. */
  driverDown?: (driver: RuntimeDriver) => boolean
  /**
   * A GPU's last sampled use (docs/gpus.md): undefined where no sampler reads it (simulated
   * GPUs, a Docker host), which a pod's runtime shows as 0.
   */
  gpuUse?: (hostId: string, index: number) => { util: number; memoryUtil: number } | undefined
}

type Listing = Map<string, { state: WorkloadState; driver: RuntimeDriver }>

/** What of a workload tells that it changed: its phase, exit, start and generation. */
function fingerprint(state: WorkloadState): string {
  return `${state.phase}|${state.exitCode}|${state.startedAt}|${state.labels[POD_LABEL_GENERATION]}`
}

/**
 * The pod lifecycle loop (docs/pods.md, "Lifecycle"): makes the processes on the hosts match
 * what the pods' statuses say, one pod at a time (pod-reconcile.ts). It looks at a pod when
 * something happened to it, not on every tick: the API changed it (nudge with its id), its
 * workload ended (the driver's watch(), or a change in the list of a driver without one), a
 * step asked to be looked at again at a due time (a starting pod's grace or port check), or
 * its host changed state (nudge without id: every pod). Every FULL_PASS_INTERVAL_MS it still
 * looks at every pod and workload, removes workloads of no pod and purges old TERMINATED pods.
 * So an idle fleet costs next to nothing, however many pods run.
 */
export class PodLifecycle implements PodRuntimeReader {
  private readonly reconciler: PodReconciler
  private readonly sampler: PodRuntimeSampler
  private readonly dirty = new Set<string>()
  /** Pods to look at again, at a time (ms on performance.now()). */
  private readonly due = new DueQueue()
  /** Each pod's step in flight (one at a time per pod). */
  private readonly steps = new Map<string, Promise<void>>()
  private readonly waiting: Array<() => void> = []
  private active = 0
  private fullWanted = true
  private lastFull = -Infinity
  private lastListing = -Infinity
  /** The last list of the drivers without watch(): each workload's fingerprint and driver. */
  private listed = new Map<string, { print: string; driver: RuntimeDriver }>()
  /** Until start(), a nudge does nothing (a replica that does not lead runs no pass). */
  private readonly loop: ReconcileLoop
  private unwatch: Array<() => void> = []

  constructor(private readonly deps: PodLifecycleDeps) {
    this.sampler = new PodRuntimeSampler(deps.logger)
    // Its figures: sampled once it runs, dropped once it no longer does.
    this.reconciler = new PodReconciler(deps, (pod, status) => {
      if (status === 'RUNNING') this.sampler.prime(pod.id, this.reconciler.driverOf(pod))
      else this.sampler.forget(pod.id)
    })
    this.loop = new ReconcileLoop({
      clock: deps.timers,
      pass: async () => {
        await this.pass()
        return { wakeInMs: this.untilNext() }
      },
      intervalMs: FULL_PASS_INTERVAL_MS,
      onError: (error) => deps.logger.error({ err: error }, 'pod lifecycle pass failed'),
    })
  }

  start(): void {
    if (this.loop.running) return
    this.sampler.start()
    this.fullWanted = true
    for (const driver of this.deps.drivers) this.watchEnds(driver)
    this.loop.start({ immediate: true })
  }

  /** A driver added after start (a remote host added at runtime): its workloads are watched too. */
  watchDriver(driver: RuntimeDriver): void {
    if (!this.loop.running) return
    this.watchEnds(driver)
    this.nudge()
  }

  private watchEnds(driver: RuntimeDriver): void {
    if (canWatchWorkloads(driver)) this.unwatch.push(driver.watch((id) => this.nudge(id)))
  }

  /**
   * Looks at the pod now (or right after the pass in progress); without an id, at every pod
   * (a host changed state).
   */
  nudge = (podId?: string): void => {
    if (!this.loop.running) return
    if (podId === undefined) this.fullWanted = true
    else this.dirty.add(podId)
    this.loop.nudge()
  }

  /** Stops the loop until the next start(): a nudge after this (a late request) starts nothing. */
  async stop(): Promise<void> {
    for (const stop of this.unwatch) stop()
    this.unwatch = []
    await this.loop.stop()
    await Promise.all(this.steps.values())
    await this.sampler.stop()
  }

  /** A pass over every pod and workload, awaited to its end; exposed so tests can step it. */
  async tick(): Promise<void> {
    await this.fullPass(true)
  }

  /** Ms until the next thing to do: a due pod, the next full pass, the next listing. */
  private untilNext(): number {
    const now = performance.now()
    if (this.dirty.size > 0 || this.fullWanted) return 0
    let next = Math.min(this.lastFull + FULL_PASS_INTERVAL_MS, this.due.next() ?? Infinity)
    if (this.deps.drivers.some((d) => !canWatchWorkloads(d))) {
      next = Math.min(next, this.lastListing + LIST_INTERVAL_MS)
    }
    return next - now
  }

  private async pass(): Promise<void> {
    const now = performance.now()
    if (this.fullWanted || now - this.lastFull >= FULL_PASS_INTERVAL_MS) {
      await this.fullPass(false)
      return
    }
    const ids = new Set(this.dirty)
    this.dirty.clear()
    for (const id of this.due.takeDue(now)) ids.add(id)
    if (now - this.lastListing >= LIST_INTERVAL_MS) {
      for (const id of await this.listChanges()) ids.add(id)
    }
    for (const id of ids) void this.run(id, () => this.stepById(id))
  }

  /**
   * Every pod with its workload as the drivers list them; then workloads of no pod, and
   * TERMINATED pods past their retention. `wait`: until every step it began has ended.
   */
  private async fullPass(wait: boolean): Promise<void> {
    this.fullWanted = false
    this.lastFull = performance.now()
    this.dirty.clear()
    this.due.clear()
    const pods = await this.deps.store.pods.list({})
    const { workloads, unlisted } = await this.listWorkloads(this.deps.drivers)
    this.remember(workloads)
    const steps = pods.map((pod) => {
      const known = !unlisted.has(this.reconciler.driverOf(pod))
      return this.run(pod.id, () => this.stepOf(pod, workloads.get(pod.id)?.state, known))
    })
    const known = new Set(pods.map((p) => p.id))
    for (const { state, driver } of workloads.values()) {
      if (state.labels[POD_LABEL_KIND] !== 'pod' || known.has(state.id)) continue
      steps.push(this.run(state.id, () => this.removeOrphan(state.id, driver)))
    }
    await this.purgeTerminated()
    if (wait) await Promise.all(steps)
  }

  /** Runs one pod's step, one at a time per pod, CONCURRENT_STEPS at a time in all. */
  private run(id: string, step: () => Promise<void>): Promise<void> {
    const inFlight = this.steps.get(id)
    if (inFlight) {
      // Looked at again once the step in flight is done: it may have read the pod before.
      this.dirty.add(id)
      return inFlight
    }
    const task = this.slot()
      .then(step)
      .catch((error: unknown) =>
        this.deps.logger.error({ err: error, podId: id }, 'reconciling pod failed'),
      )
      .finally(() => {
        this.release()
        this.steps.delete(id)
        if (this.dirty.has(id)) this.loop.nudge()
      })
    this.steps.set(id, task)
    return task
  }

  private slot(): Promise<void> {
    if (this.active < CONCURRENT_STEPS) {
      this.active += 1
      return Promise.resolve()
    }
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  private release(): void {
    const next = this.waiting.shift()
    if (next) next()
    else this.active -= 1
  }

  /** The pod as the store has it now, with its workload as its driver says now. */
  private async stepById(id: string): Promise<void> {
    const pod = await this.deps.store.pods.findById(id)
    // Purged, or not a pod (a serverless worker's workload on the same driver).
    if (!pod) return
    const driver = this.reconciler.driverOf(pod)
    if (this.deps.driverDown?.(driver)) return this.stepOf(pod, undefined, false)
    let workload: WorkloadState | undefined
    try {
      workload = await withTimeout(driver.inspect(pod.id), LIST_TIMEOUT_MS)
    } catch (error) {
      this.deps.logger.warn({ err: error, podId: id }, 'reading the pod workload failed')
      return this.stepOf(pod, undefined, false)
    }
    return this.stepOf(pod, workload, true)
  }

  private async stepOf(
    pod: Pod,
    workload: WorkloadState | undefined,
    known: boolean,
  ): Promise<void> {
    if (pod.status !== 'RUNNING') this.sampler.forget(pod.id)
    const next: NextLook = await this.reconciler.step(pod, workload, known)
    if (next === undefined) {
      this.due.delete(pod.id)
    } else if (next === 0) {
      this.dirty.add(pod.id)
      this.loop.nudge()
    } else {
      this.due.set(pod.id, performance.now() + next)
      this.loop.wakeIn(next)
    }
  }

  /** Ids whose workload changed in the list of a driver without watch(). */
  private async listChanges(): Promise<string[]> {
    this.lastListing = performance.now()
    const unwatched = this.deps.drivers.filter((d) => !canWatchWorkloads(d))
    if (unwatched.length === 0) return []
    const { workloads, unlisted } = await this.listWorkloads(unwatched)
    const changed: string[] = []
    const seen = new Map<string, { print: string; driver: RuntimeDriver }>()
    for (const [id, { state, driver }] of workloads) {
      const print = fingerprint(state)
      seen.set(id, { print, driver })
      if (this.listed.get(id)?.print !== print) changed.push(id)
    }
    for (const [id, last] of this.listed) {
      if (seen.has(id)) continue
      // Gone from a driver that answered; on one that did not, it is unknown, not gone.
      if (unlisted.has(last.driver)) seen.set(id, last)
      else changed.push(id)
    }
    this.listed = seen
    return changed
  }

  private remember(workloads: Listing): void {
    this.listed = new Map(
      [...workloads]
        .filter(([, { driver }]) => !canWatchWorkloads(driver))
        .map(([id, { state, driver }]) => [id, { print: fingerprint(state), driver }]),
    )
    this.lastListing = performance.now()
  }

  /**
   * The drivers' workloads, each with the driver that has it. A driver that does not answer
   * (its host is being lost) is `unlisted`: its pods' workloads are unknown, not gone.
   */
  private async listWorkloads(
    drivers: RuntimeDriver[],
  ): Promise<{ workloads: Listing; unlisted: Set<RuntimeDriver> }> {
    const workloads: Listing = new Map()
    const unlisted = new Set<RuntimeDriver>()
    await Promise.all(
      drivers.map(async (driver) => {
        if (this.deps.driverDown?.(driver)) return void unlisted.add(driver)
        try {
          for (const state of await withTimeout(driver.list(), LIST_TIMEOUT_MS)) {
            if (!workloads.has(state.id)) workloads.set(state.id, { state, driver })
          }
        } catch (error) {
          unlisted.add(driver)
          this.deps.logger.warn({ err: error, driver: driver.name }, 'listing workloads failed')
        }
      }),
    )
    return { workloads, unlisted }
  }

  /** A pod workload whose pod no longer exists (purged, or deleted while the server was down). */
  private async removeOrphan(id: string, driver: RuntimeDriver): Promise<void> {
    if (await this.deps.store.pods.findById(id)) return
    this.deps.logger.warn({ workloadId: id }, 'removing a workload that belongs to no pod')
    await driver.remove(id)
    await rm(path.join(this.deps.dataDir, 'pods', id), { recursive: true, force: true })
  }

  private async purgeTerminated(): Promise<void> {
    const before = new Date(this.deps.clock.now().getTime() - TERMINATED_RETENTION_MS).toISOString()
    for (const id of await this.deps.store.pods.purgeTerminated(before)) {
      this.reconciler.purged(id)
      this.sampler.forget(id)
    }
  }

  /**
   * The runtime block of a RUNNING pod, from what the platform holds: its start (uptime), its
   * ports, and the usage figures the sampler measured last (none before its first sample). No
   * request waits for a measurement.
   */
  async runtimeOf(pod: Pod): Promise<PodRuntime | null> {
    if (pod.hostId && this.deps.hostDown?.(pod.hostId)) return null
    const stats = this.sampler.read(pod.id, this.reconciler.driverOf(pod))
    const ip = this.reconciler.networkOf(pod.hostId ?? '').publicIp
    const startedAt = Date.parse(pod.startedAt ?? pod.lastStatusChange)
    return {
      uptime: Math.max(0, Math.floor((this.deps.clock.now().getTime() - startedAt) / 1000)),
      // In the pod's GPU order; simulated GPUs have no counters and stay at 0 (docs/gpus.md).
      gpus: pod.gpuIndices.map(
        (index) =>
          (pod.hostId ? this.deps.gpuUse?.(pod.hostId, index) : undefined) ?? {
            util: 0,
            memoryUtil: 0,
          },
      ),
      ...(stats ? { cpu: { util: stats.cpuPercent }, memory: { util: stats.memoryPercent } } : {}),
      ports: pod.portMappings.map((p) => ({
        private: p.private,
        public: p.public,
        type: p.type,
        ip,
      })),
    }
  }

  async readContainerLogs(pod: Pod, query: PodLogQuery): Promise<PodLogLine[]> {
    return this.reconciler.driverOf(pod).readLogs(pod.id, query)
  }

  async *followContainerLogs(
    pod: Pod,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<PodLogLine> {
    const launched = await untilLaunched(
      pod,
      () => this.deps.store.pods.findById(pod.id),
      (current) => current.status === 'PROVISIONING',
      signal,
    )
    if (launched) {
      yield* this.reconciler.driverOf(launched).followLogs(launched.id, afterSeq, signal)
    }
  }
}
