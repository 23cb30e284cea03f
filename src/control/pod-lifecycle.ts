import { mkdir, rm } from 'node:fs/promises'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Fleet } from '../domain/catalog/fleet.js'
import { hostLostAt, hostLostReason } from '../domain/hosts/host-state.js'
import type { Pod, PodRuntime, PodStatus } from '../domain/pods/pod.js'
import { MAX_CRASH_RESTARTS } from '../domain/pods/pod-rules.js'
import { TERMINATED_RETENTION_MS } from '../domain/pods/pod-service.js'
import type { PodLogLine, PodLogQuery, PodRuntimeReader, PodStore } from '../domain/pods/ports.js'
import type { RuntimeDriver, WorkloadState } from '../runtime/driver.js'
import type { Clock } from '../shared/clock.js'
import { freePort, portAnswers } from './free-port.js'
import {
  assignPorts,
  type PodAttachments,
  podDirectories,
  POD_LABEL_GENERATION,
  POD_LABEL_KIND,
  workloadOf,
} from './pod-workload.js'

/** A pod is RUNNING once its process has stayed up this long (and its http port answers). */
export const STARTUP_GRACE_MS = 1000
/** A process that never opens its declared http port still counts as started after this. */
export const HTTP_READY_TIMEOUT_MS = 30_000
export const STOP_GRACE_MS = 10_000
const TICK_MS = 500
/** A driver whose list takes longer is treated as not answering for this pass. */
const LIST_TIMEOUT_MS = 15_000
/** Starts on a remote host tried with new random ports when the engine says one is taken. */
const PORT_ATTEMPTS = 3
/** How often a log follower of a pod still being placed looks whether its workload exists. */
const LAUNCH_WAIT_POLL_MS = 100
const REMOTE_PORTS = { from: 30_000, count: 30_000 }

function randomRemotePort(): number {
  return REMOTE_PORTS.from + Math.floor(Math.random() * REMOTE_PORTS.count)
}

/** The engine refused a published port another process holds. */
function portTaken(error: unknown): boolean {
  return /port is already allocated|address already in use/i.test((error as Error)?.message ?? '')
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

export interface PodLifecycleDeps {
  store: PodStore
  fleet: Fleet
  /** The runtime driver of a host. */
  driverFor: (hostId: string) => RuntimeDriver
  drivers: RuntimeDriver[]
  dataDir: string
  /** The server's own address: the public IP of hosts that run here. */
  publicIp: string
  /**
   * Where a host's published ports are reached, and whether its runtime is another machine
   * (its ports are then chosen without asking this machine, and checked at its address).
   */
  hostNetwork?: (hostId: string) => { publicIp: string; remote: boolean }
  /** The host's state when it is DOWN (the host board), else undefined. */
  hostDown?: (hostId: string) => { since: string; reason: string | null } | undefined
  /** Whether every host a driver serves is DOWN: then it is not even asked for its list. */
  driverDown?: (driver: RuntimeDriver) => boolean
  /** Host directory of a network volume. */
  volumePath: (volumeId: string, dataCenterId: string) => string
  /** Decrypted credentials of a registry of the account, for pulling the pod's image. */
  registryCredentials: (
    accountId: string,
    registryId: string,
  ) => Promise<{ username: string; password: string } | undefined>
  /** The account's SSH public keys (authorized_keys text), or null when none are set. */
  publicKeys: (accountId: string) => Promise<string | null>
  /**
   * Why the account's pod may not run on this driver (workload-isolation.ts), or null. The pod
   * goes ERROR with the reason instead of running unsandboxed.
   */
  isolationRefusal?: (accountId: string, driver: RuntimeDriver) => Promise<string | null>
  clock: Clock
  logger: Logger
}

/**
 * The pod lifecycle loop: makes the processes on the hosts match what the pods' statuses say,
 * and moves statuses forward as processes start, become healthy and exit. The API changes
 * statuses (start, stop, terminate); this loop does the work.
 */
export class PodLifecycle implements PodRuntimeReader {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private again = false
  /** Until start(): a nudge does nothing (a replica that does not lead runs no pass). */
  private stopped = true
  private readonly busy = new Set<string>()
  private readonly cleaned = new Set<string>()

  constructor(private readonly deps: PodLifecycleDeps) {}

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.timer = setInterval(() => this.nudge(), TICK_MS)
    this.timer.unref()
    this.nudge()
  }

  /** Runs a reconcile pass now (or right after the one in progress). */
  nudge = (): void => {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = this.tick()
      .catch((error: unknown) =>
        this.deps.logger.error({ err: error }, 'pod lifecycle pass failed'),
      )
      .finally(() => {
        this.running = undefined
        if (this.again) {
          this.again = false
          this.nudge()
        }
      })
  }

  /** Stops the loop until the next start(): a nudge after this (a late request) starts nothing. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    await this.running
  }

  /** One pass over every pod and every workload; exposed so tests can step it. */
  async tick(): Promise<void> {
    const pods = await this.deps.store.pods.list({})
    const { workloads, unlisted } = await this.listWorkloads()
    await Promise.all(
      pods.map((pod) => {
        const listed = !unlisted.has(this.driverOf(pod))
        return this.reconcileGuarded(pod, workloads.get(pod.id)?.state, listed)
      }),
    )
    await this.removeOrphans(pods, workloads)
    await this.purgeTerminated()
  }

  /**
   * Every driver's workloads, each with the driver that has it. A driver that does not answer
   * (its host is being lost) is `unlisted`: its pods' workloads are unknown, not gone.
   */
  private async listWorkloads(): Promise<{
    workloads: Map<string, { state: WorkloadState; driver: RuntimeDriver }>
    unlisted: Set<RuntimeDriver>
  }> {
    const workloads = new Map<string, { state: WorkloadState; driver: RuntimeDriver }>()
    const unlisted = new Set<RuntimeDriver>()
    await Promise.all(
      this.deps.drivers.map(async (driver) => {
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

  private async reconcileGuarded(
    pod: Pod,
    workload: WorkloadState | undefined,
    listed: boolean,
  ): Promise<void> {
    if (this.busy.has(pod.id)) return
    this.busy.add(pod.id)
    try {
      const down = pod.hostId ? this.deps.hostDown?.(pod.hostId) : undefined
      if (down) await this.hostLost(pod, down)
      else if (!listed) return
      else if (pod.status === 'ERROR' && hostLostAt(pod.statusReason, pod.hostId))
        await this.hostBack(pod, workload)
      else await this.reconcile(pod, workload)
    } catch (error) {
      this.deps.logger.error({ err: error, podId: pod.id }, 'reconciling pod failed')
    } finally {
      this.busy.delete(pod.id)
    }
  }

  /**
   * The pod's host is DOWN: a pod that runs (or was about to) goes ERROR naming the host and
   * when it was lost. Its place on the host is kept: its container may still be alive there.
   */
  private async hostLost(pod: Pod, down: { since: string; reason: string | null }): Promise<void> {
    if (pod.status !== 'PROVISIONING' && pod.status !== 'STARTING' && pod.status !== 'RUNNING')
      return
    await this.transition(pod, 'ERROR', hostLostReason(pod.hostId!, down.since, down.reason))
  }

  /**
   * The lost host answers again: a pod whose container is still running there is adopted
   * (RUNNING again, not restarted); otherwise it stays ERROR and lets its place go.
   */
  private async hostBack(pod: Pod, workload: WorkloadState | undefined): Promise<void> {
    const current =
      workload && this.generationOf(workload) === pod.generation ? workload : undefined
    if (current?.phase === 'running') {
      await this.event(pod, `host ${pod.hostId} is back and the pod's container still runs`)
      await this.transition(pod, 'RUNNING', null)
      return
    }
    const what = current ? `exited with code ${current.exitCode ?? 'none (killed)'}` : 'was gone'
    await this.releaseAndSet(
      pod,
      'ERROR',
      `its container ${what} when host ${pod.hostId} came back (${pod.statusReason})`,
    )
  }

  private generationOf(workload: WorkloadState | undefined): number | undefined {
    const label = workload?.labels[POD_LABEL_GENERATION]
    return label === undefined ? undefined : Number(label)
  }

  private async reconcile(pod: Pod, workload: WorkloadState | undefined): Promise<void> {
    const current =
      workload && this.generationOf(workload) === pod.generation ? workload : undefined
    const stale = workload && workload.phase === 'running' && !current
    switch (pod.status) {
      case 'PROVISIONING':
        if (stale) await this.driverOf(pod).stop(pod.id, { graceMs: STOP_GRACE_MS })
        if (current?.phase === 'running') return void (await this.transition(pod, 'STARTING', null))
        return this.launch(pod)
      case 'STARTING':
        return this.watchStart(pod, current)
      case 'RUNNING':
        return this.watchRunning(pod, current)
      case 'EXITED':
      case 'ERROR':
        if (workload?.phase === 'running') {
          await this.driverOf(pod).stop(pod.id, { graceMs: STOP_GRACE_MS })
          await this.event(pod, 'process stopped')
        }
        return
      case 'TERMINATED':
        return this.cleanUp(pod, workload !== undefined)
    }
  }

  private driverOf(pod: Pod): RuntimeDriver {
    return this.deps.driverFor(pod.hostId ?? '')
  }

  private networkOf(hostId: string): { publicIp: string; remote: boolean } {
    return this.deps.hostNetwork?.(hostId) ?? { publicIp: this.deps.publicIp, remote: false }
  }

  private async event(pod: Pod, line: string): Promise<void> {
    await this.deps.store.events.append(pod.id, this.deps.clock.now().toISOString(), line)
  }

  /** Writes a status change unless the pod changed meanwhile (then the next pass sees it). */
  private async transition(
    pod: Pod,
    status: PodStatus,
    reason: string | null,
    extra: Partial<Pod> = {},
  ): Promise<boolean> {
    const now = this.deps.clock.now().toISOString()
    const written = await this.deps.store.pods.update({
      ...pod,
      ...extra,
      status,
      statusReason: reason,
      lastStatusChange: now,
      version: pod.version + 1,
    })
    if (written) {
      this.deps.logger.info({ podId: pod.id, from: pod.status, to: status, reason }, 'pod status')
      await this.event(pod, `${status}${reason ? `: ${reason}` : ''}`)
    }
    return written
  }

  private async releaseAndSet(pod: Pod, status: 'EXITED' | 'ERROR', reason: string): Promise<void> {
    if (await this.transition(pod, status, reason, { gpuIndices: [] })) {
      await this.deps.store.allocations.remove('pod', pod.id)
    }
  }

  private async launch(pod: Pod): Promise<void> {
    const allocation = await this.deps.store.allocations.findByOwner('pod', pod.id)
    if (!allocation) return this.releaseAndSet(pod, 'ERROR', 'its host reservation is missing')
    const host = this.deps.fleet.hosts.find((h) => h.id === pod.hostId)
    if (!host)
      return this.releaseAndSet(pod, 'ERROR', `host ${pod.hostId} is no longer in the fleet`)
    const refusal = await this.deps.isolationRefusal?.(pod.accountId, this.driverOf(pod))
    if (refusal) return this.releaseAndSet(pod, 'ERROR', refusal)
    const dirs = podDirectories(this.deps.dataDir, pod.id)
    try {
      await mkdir(dirs.containerDisk, { recursive: true })
      if (pod.mounts.persistent) await mkdir(dirs.persistent, { recursive: true })
      const network = this.networkOf(host.id)
      const attachments = await this.attachmentsOf(pod)
      for (let attempt = 1; ; attempt++) {
        // A remote host's free ports are not this machine's: a random one, again if taken.
        const portMappings = await assignPorts(pod, () =>
          network.remote ? Promise.resolve(randomRemotePort()) : freePort(),
        )
        const spec = workloadOf(
          pod,
          dirs,
          {
            dataCenterId: host.dataCenterId,
            publicIp: network.publicIp,
            vcpus: allocation.vcpus,
            memoryGb: allocation.memoryGb,
          },
          portMappings,
          attachments,
        )
        await this.event(
          pod,
          `starting ${spec.command === null ? `image ${pod.image}` : 'its command'} on host ${host.id}`,
        )
        try {
          await this.driverOf(pod).start(spec)
        } catch (error) {
          if (network.remote && attempt < PORT_ATTEMPTS && portTaken(error)) continue
          throw error
        }
        await this.transition(pod, 'STARTING', null, { portMappings })
        return
      }
    } catch (error) {
      await this.releaseAndSet(pod, 'ERROR', `could not start: ${(error as Error).message}`)
    }
  }

  private async attachmentsOf(pod: Pod): Promise<PodAttachments> {
    const volumeId = pod.mounts.network?.[0]?.volumeId
    const registryAuth = pod.registry
      ? await this.deps.registryCredentials(pod.accountId, pod.registry)
      : undefined
    if (pod.registry && !registryAuth) throw new Error(`registry ${pod.registry} no longer exists`)
    // Only pods created with startSsh get the keys (absent: a pod from before the flag, which did).
    const publicKey = pod.startSsh === false ? null : await this.deps.publicKeys(pod.accountId)
    return {
      ...(volumeId
        ? { networkVolumePath: this.deps.volumePath(volumeId, pod.dataCenterId ?? '') }
        : {}),
      ...(registryAuth ? { registryAuth } : {}),
      ...(publicKey ? { publicKey } : {}),
    }
  }

  private async watchStart(pod: Pod, workload: WorkloadState | undefined): Promise<void> {
    if (!workload)
      return void (await this.transition(
        pod,
        'PROVISIONING',
        'its process was not found; starting again',
      ))
    if (workload.phase === 'exited') {
      return this.releaseAndSet(
        pod,
        'ERROR',
        `the process exited with code ${workload.exitCode ?? 'none (killed)'} while starting`,
      )
    }
    const aliveMs = this.deps.clock.now().getTime() - new Date(workload.startedAt).getTime()
    if (aliveMs < STARTUP_GRACE_MS) return
    const http = pod.portMappings.find((p) => p.type === 'http')
    const network = this.networkOf(pod.hostId ?? '')
    const address = network.remote ? network.publicIp : '127.0.0.1'
    if (http && aliveMs < HTTP_READY_TIMEOUT_MS && !(await portAnswers(http.public, address)))
      return
    await this.transition(pod, 'RUNNING', null, { startedAt: workload.startedAt })
  }

  private async watchRunning(pod: Pod, workload: WorkloadState | undefined): Promise<void> {
    if (workload?.phase === 'running') return
    const code = workload?.exitCode
    if (workload && code === 0)
      return this.releaseAndSet(pod, 'EXITED', 'the process exited with code 0')
    const what = workload
      ? `the process exited with code ${code ?? 'none (killed)'}`
      : 'its process is gone'
    if (pod.crashRestarts < MAX_CRASH_RESTARTS) {
      await this.transition(
        pod,
        'PROVISIONING',
        `${what}; restart ${pod.crashRestarts + 1} of ${MAX_CRASH_RESTARTS}`,
        {
          generation: pod.generation + 1,
          crashRestarts: pod.crashRestarts + 1,
        },
      )
      return
    }
    return this.releaseAndSet(pod, 'ERROR', `${what} after ${MAX_CRASH_RESTARTS} restarts`)
  }

  private async cleanUp(pod: Pod, hasWorkload: boolean): Promise<void> {
    if (this.cleaned.has(pod.id) && !hasWorkload) return
    if (hasWorkload) await this.driverOf(pod).remove(pod.id)
    await rm(path.dirname(podDirectories(this.deps.dataDir, pod.id).containerDisk), {
      recursive: true,
      force: true,
    })
    this.cleaned.add(pod.id)
  }

  /** Pod workloads whose pod no longer exists (purged, or deleted while the server was down). */
  private async removeOrphans(
    pods: Pod[],
    workloads: Map<string, { state: WorkloadState; driver: RuntimeDriver }>,
  ): Promise<void> {
    const known = new Set(pods.map((p) => p.id))
    for (const { state: workload, driver } of workloads.values()) {
      if (workload.labels[POD_LABEL_KIND] !== 'pod' || known.has(workload.id)) continue
      this.deps.logger.warn(
        { workloadId: workload.id },
        'removing a workload that belongs to no pod',
      )
      await driver.remove(workload.id)
      await rm(path.join(this.deps.dataDir, 'pods', workload.id), { recursive: true, force: true })
    }
  }

  private async purgeTerminated(): Promise<void> {
    const before = new Date(this.deps.clock.now().getTime() - TERMINATED_RETENTION_MS).toISOString()
    for (const id of await this.deps.store.pods.purgeTerminated(before)) this.cleaned.delete(id)
  }

  async runtimeOf(pod: Pod): Promise<PodRuntime | null> {
    if (pod.hostId && this.deps.hostDown?.(pod.hostId)) return null
    const driver = this.driverOf(pod)
    let workload: WorkloadState | undefined
    let stats: Awaited<ReturnType<RuntimeDriver['stats']>>
    try {
      workload = await driver.inspect(pod.id)
      if (!workload || workload.phase !== 'running') return null
      stats = await driver.stats(pod.id)
    } catch (error) {
      // The host stopped answering since its last probe: no runtime to show, not a failed read.
      this.deps.logger.warn({ err: error, podId: pod.id }, 'reading the pod runtime failed')
      return null
    }
    const ip = this.networkOf(pod.hostId ?? '').publicIp
    return {
      uptime: Math.max(
        0,
        Math.floor(
          (this.deps.clock.now().getTime() - new Date(workload.startedAt).getTime()) / 1000,
        ),
      ),
      // Simulated GPUs have no counters; a real GPU's utilisation comes with the docker driver.
      gpus: pod.gpuIndices.map(() => ({ util: 0, memoryUtil: 0 })),
      cpu: { util: stats?.cpuPercent ?? 0 },
      memory: { util: stats?.memoryPercent ?? 0 },
      ports: pod.portMappings.map((p) => ({
        private: p.private,
        public: p.public,
        type: p.type,
        ip,
      })),
    }
  }

  async readContainerLogs(pod: Pod, query: PodLogQuery): Promise<PodLogLine[]> {
    return this.driverOf(pod).readLogs(pod.id, query)
  }

  async *followContainerLogs(
    pod: Pod,
    afterSeq: number,
    signal: AbortSignal,
  ): AsyncIterable<PodLogLine> {
    const launched = await this.untilLaunched(pod, signal)
    if (launched) yield* this.driverOf(launched).followLogs(launched.id, afterSeq, signal)
  }

  /**
   * A PROVISIONING pod has no workload (nor, before placement, a host) to follow yet: waits
   * until it leaves that status, so that a follower connected right after the create sees the
   * first line. Undefined when the follower went away or the pod did.
   */
  private async untilLaunched(pod: Pod, signal: AbortSignal): Promise<Pod | undefined> {
    let current: Pod | undefined = pod
    while (current?.status === 'PROVISIONING' && !signal.aborted) {
      await sleep(LAUNCH_WAIT_POLL_MS, undefined, { signal }).catch(() => undefined)
      current = await this.deps.store.pods.findById(pod.id)
    }
    return signal.aborted ? undefined : current
  }
}
