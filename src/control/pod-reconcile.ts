import { tracePodStatus } from '../domain/pods/pod-tracing.js'
import type { Tracing } from '../shared/tracing.js'
import { mkdir, rm } from 'node:fs/promises'
import type { SecretEnvResolver } from '../domain/secrets/ports.js'
import path from 'node:path'
import type { Logger } from 'pino'
import type { Fleet, Host } from '../domain/catalog/fleet.js'
import { hostLostAt, hostLostReason } from '../domain/hosts/host-state.js'
import type { Pod, PodStatus } from '../domain/pods/pod.js'
import { MAX_CRASH_RESTARTS } from '../domain/pods/pod-rules.js'
import type { PodStore } from '../domain/pods/ports.js'
import {
  PublishedPortTakenError,
  type RuntimeDriver,
  type WorkloadState,
} from '../runtime/driver.js'
import type { Clock } from '../shared/clock.js'
import { freePort, portAnswers } from './free-port.js'
import { outOfMemoryReason } from './out-of-memory.js'
import {
  assignPorts,
  type PodAttachments,
  podDirectories,
  POD_LABEL_GENERATION,
  workloadOf,
} from './pod-workload.js'

/** A pod without an http port is RUNNING once its process has stayed up this long. */
export const STARTUP_GRACE_MS = 1000
/** A process that never opens its declared http port still counts as started after this. */
export const HTTP_READY_TIMEOUT_MS = 30_000
export const STOP_GRACE_MS = 10_000
/** How soon a pod whose driver did not answer is looked at again. */
const UNKNOWN_RETRY_MS = 1000
/** How soon a STARTING pod's http port is tried again: soon at first, then less often. */
const PORT_RETRY_MIN_MS = 10
const PORT_RETRY_MAX_MS = 250
/** Starts on a remote host tried with new random ports when the engine says one is taken. */
const PORT_ATTEMPTS = 3
const REMOTE_PORTS = { from: 30_000, count: 30_000 }

function randomRemotePort(): number {
  return REMOTE_PORTS.from + Math.floor(Math.random() * REMOTE_PORTS.count)
}

export interface PodReconcileDeps {
  store: PodStore
  /** Writes the pods' spans (docs/production.md, "Tracing"); none when tracing is off. */
  tracing?: Tracing
  fleet: Fleet
  /** The runtime driver of a host. */
  driverFor: (hostId: string) => RuntimeDriver
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
  /** Host directory of a network volume. */
  volumePath: (volumeId: string, dataCenterId: string) => string
  /**
   * The size of an account's network volume where a driver may bound it (on this machine's
   * storage, not a data center's shared one); undefined: not bounded.
   */
  volumeBoundGb?: (
    accountId: string,
    volumeId: string,
    dataCenterId: string,
  ) => Promise<number | undefined>
  /** Decrypted credentials of a registry of the account, for pulling the pod's image. */
  registryCredentials: (
    accountId: string,
    registryId: string,
  ) => Promise<{ username: string; password: string } | undefined>
  /** Resolves the account's secrets referenced from the pod's env; throws naming a missing one. */
  resolveEnv?: SecretEnvResolver
  /** The account's SSH public keys (authorized_keys text), or null when none are set. */
  publicKeys: (accountId: string) => Promise<string | null>
  /**
   * Why the pod may not run on this driver (workload-isolation.ts), or null. The pod goes ERROR
   * with the reason instead of running unsandboxed, or not held to what it rented.
   */
  isolationRefusal?: (pod: Pod, driver: RuntimeDriver) => Promise<string | null>
  clock: Clock
  logger: Logger
}

/**
 * What to do next about a pod, after one step: look again in that many ms (0: at once, the
 * pod changed), or nothing until something happens to it.
 */
export type NextLook = number | undefined

/**
 * One pod's step of the lifecycle (pod-lifecycle.ts runs them): makes its workload match what
 * its status says, and moves the status forward as the workload starts, becomes healthy and
 * exits. Each step says when the pod wants looking at again.
 */
export class PodReconciler {
  private hostMap: ReadonlyMap<string, Host> = new Map()
  /** The fleet's hosts hostMap was built from: another array, hosts were added or removed. */
  private hostsOf: readonly Host[] | undefined
  /** TERMINATED pods whose files are gone (until their rows are purged). */
  private readonly cleaned = new Set<string>()

  /** @param statusChanged told after each status this reconciler wrote */
  constructor(
    private readonly deps: PodReconcileDeps,
    private readonly statusChanged: (pod: Pod, status: PodStatus) => void = () => {},
  ) {}

  private get hosts(): ReadonlyMap<string, Host> {
    if (this.hostsOf !== this.deps.fleet.hosts) {
      this.hostMap = new Map(this.deps.fleet.hosts.map((h) => [h.id, h]))
      this.hostsOf = this.deps.fleet.hosts
    }
    return this.hostMap
  }

  driverOf(pod: Pod): RuntimeDriver {
    return this.deps.driverFor(pod.hostId ?? '')
  }

  networkOf(hostId: string): { publicIp: string; remote: boolean } {
    return this.deps.hostNetwork?.(hostId) ?? { publicIp: this.deps.publicIp, remote: false }
  }

  /** The pod's rows were purged: its id may be forgotten. */
  purged(id: string): void {
    this.cleaned.delete(id)
  }

  /** `known`: the workload is what its driver said now; false when the driver did not answer. */
  async step(pod: Pod, workload: WorkloadState | undefined, known: boolean): Promise<NextLook> {
    const down = pod.hostId ? this.deps.hostDown?.(pod.hostId) : undefined
    if (down) return this.hostLost(pod, down)
    if (!known) return UNKNOWN_RETRY_MS
    if (pod.status === 'ERROR' && hostLostAt(pod.statusReason, pod.hostId))
      return this.hostBack(pod, workload)
    return this.reconcile(pod, workload)
  }

  /**
   * The pod's host is DOWN: a pod that runs (or was about to) goes ERROR naming the host and
   * when it was lost. Its place on the host is kept: its container may still be alive there.
   */
  private async hostLost(
    pod: Pod,
    down: { since: string; reason: string | null },
  ): Promise<NextLook> {
    if (pod.status !== 'PROVISIONING' && pod.status !== 'STARTING' && pod.status !== 'RUNNING')
      return undefined
    await this.transition(pod, 'ERROR', hostLostReason(pod.hostId!, down.since, down.reason))
    return undefined
  }

  /**
   * The lost host answers again: a pod whose container is still running there is adopted
   * (RUNNING again, not restarted); otherwise it stays ERROR and lets its place go.
   */
  private async hostBack(pod: Pod, workload: WorkloadState | undefined): Promise<NextLook> {
    const current =
      workload && this.generationOf(workload) === pod.generation ? workload : undefined
    if (current?.phase === 'running') {
      await this.event(pod, `host ${pod.hostId} is back and the pod's container still runs`)
      await this.transition(pod, 'RUNNING', null)
      return undefined
    }
    const what = current ? `exited with code ${current.exitCode ?? 'none (killed)'}` : 'was gone'
    await this.releaseAndSet(
      pod,
      'ERROR',
      `its container ${what} when host ${pod.hostId} came back (${pod.statusReason})`,
    )
    return undefined
  }

  private generationOf(workload: WorkloadState | undefined): number | undefined {
    const label = workload?.labels[POD_LABEL_GENERATION]
    return label === undefined ? undefined : Number(label)
  }

  private async reconcile(pod: Pod, workload: WorkloadState | undefined): Promise<NextLook> {
    const current =
      workload && this.generationOf(workload) === pod.generation ? workload : undefined
    const stale = workload && workload.phase === 'running' && !current
    switch (pod.status) {
      case 'PROVISIONING':
        if (stale) await this.driverOf(pod).stop(pod.id, { graceMs: STOP_GRACE_MS })
        if (current?.phase === 'running') {
          return (await this.transition(pod, 'STARTING', null)) ? 0 : undefined
        }
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
        return undefined
      case 'TERMINATED':
        await this.cleanUp(pod, workload !== undefined)
        return undefined
    }
  }

  private async event(pod: Pod, line: string): Promise<void> {
    await this.deps.store.events.append(pod.id, this.deps.clock.now().toISOString(), line)
  }

  /** Writes a status change unless the pod changed meanwhile (then whoever changed it nudges). */
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
      if (this.deps.tracing) {
        const after = { ...pod, ...extra, status, statusReason: reason }
        tracePodStatus(this.deps.tracing, pod, after, Date.parse(now))
      }
      this.statusChanged(pod, status)
      await this.event(pod, `${status}${reason ? `: ${reason}` : ''}`)
    }
    return written
  }

  private async releaseAndSet(pod: Pod, status: 'EXITED' | 'ERROR', reason: string): Promise<void> {
    if (await this.transition(pod, status, reason, { gpuIndices: [] })) {
      await this.deps.store.allocations.remove('pod', pod.id)
    }
  }

  private async launch(pod: Pod): Promise<NextLook> {
    const allocation = await this.deps.store.allocations.findByOwner('pod', pod.id)
    if (!allocation) {
      await this.releaseAndSet(pod, 'ERROR', 'its host reservation is missing')
      return undefined
    }
    const host = pod.hostId === null ? undefined : this.hosts.get(pod.hostId)
    if (!host) {
      await this.releaseAndSet(pod, 'ERROR', `host ${pod.hostId} is no longer in the fleet`)
      return undefined
    }
    const refusal = await this.deps.isolationRefusal?.(pod, this.driverOf(pod))
    if (refusal) {
      await this.releaseAndSet(pod, 'ERROR', refusal)
      return undefined
    }
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
          if (network.remote && attempt < PORT_ATTEMPTS && error instanceof PublishedPortTakenError)
            continue
          throw error
        }
        if (!(await this.transition(pod, 'STARTING', null, { portMappings }))) return undefined
        // Just started: its port is worth a try soon, its grace is a whole second away.
        return portMappings.some((p) => p.type === 'http') ? PORT_RETRY_MIN_MS : STARTUP_GRACE_MS
      }
    } catch (error) {
      await this.releaseAndSet(pod, 'ERROR', `could not start: ${(error as Error).message}`)
      return undefined
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
    // A missing secret throws: the pod goes ERROR with the secret's name (never a value).
    const env = this.deps.resolveEnv ? await this.deps.resolveEnv(pod.accountId, pod.env) : pod.env
    const boundGb =
      volumeId && (await this.deps.volumeBoundGb?.(pod.accountId, volumeId, pod.dataCenterId ?? ''))
    return {
      env,
      ...(volumeId
        ? { networkVolumePath: this.deps.volumePath(volumeId, pod.dataCenterId ?? '') }
        : {}),
      ...(boundGb ? { networkVolumeSizeGb: boundGb } : {}),
      ...(registryAuth ? { registryAuth } : {}),
      ...(publicKey ? { publicKey } : {}),
    }
  }

  /**
   * STARTING -> RUNNING: a pod with a declared http port as soon as the port answers (or once
   * HTTP_READY_TIMEOUT_MS passed without an answer), one without once its process has stayed
   * up STARTUP_GRACE_MS.
   */
  private async watchStart(pod: Pod, workload: WorkloadState | undefined): Promise<NextLook> {
    if (!workload) {
      const written = await this.transition(
        pod,
        'PROVISIONING',
        'its process was not found; starting again',
      )
      return written ? 0 : undefined
    }
    if (workload.phase === 'exited') {
      await this.releaseAndSet(pod, 'ERROR', `${await this.exitOf(pod, workload)} while starting`)
      return undefined
    }
    const aliveMs = this.deps.clock.now().getTime() - new Date(workload.startedAt).getTime()
    const http = pod.portMappings.find((p) => p.type === 'http')
    if (http) {
      const network = this.networkOf(pod.hostId ?? '')
      const address = network.remote ? network.publicIp : '127.0.0.1'
      if (aliveMs < HTTP_READY_TIMEOUT_MS && !(await portAnswers(http.public, address))) {
        return Math.min(PORT_RETRY_MAX_MS, Math.max(PORT_RETRY_MIN_MS, aliveMs / 10))
      }
    } else if (aliveMs < STARTUP_GRACE_MS) {
      return Math.max(PORT_RETRY_MIN_MS, STARTUP_GRACE_MS - aliveMs)
    }
    await this.transition(pod, 'RUNNING', null, { startedAt: workload.startedAt })
    return undefined
  }

  private async watchRunning(pod: Pod, workload: WorkloadState | undefined): Promise<NextLook> {
    if (workload?.phase === 'running') return undefined
    const code = workload?.exitCode
    if (workload && code === 0) {
      await this.releaseAndSet(pod, 'EXITED', 'the process exited with code 0')
      return undefined
    }
    const what = workload ? await this.exitOf(pod, workload) : 'its process is gone'
    if (pod.crashRestarts < MAX_CRASH_RESTARTS) {
      const written = await this.transition(
        pod,
        'PROVISIONING',
        `${what}; restart ${pod.crashRestarts + 1} of ${MAX_CRASH_RESTARTS}`,
        {
          generation: pod.generation + 1,
          crashRestarts: pod.crashRestarts + 1,
        },
      )
      return written ? 0 : undefined
    }
    await this.releaseAndSet(pod, 'ERROR', `${what} after ${MAX_CRASH_RESTARTS} restarts`)
    return undefined
  }

  /**
   * How the pod's process ended, for its statusReason: `the process exited with code 3`, or
   * what it ran out of when the kernel killed it for its memory limit (outOfMemoryReason).
   */
  private async exitOf(pod: Pod, workload: WorkloadState): Promise<string> {
    if (workload.outOfMemory && workload.exitCode !== 0) {
      const allocation = await this.deps.store.allocations.findByOwner('pod', pod.id)
      return outOfMemoryReason('pod', allocation?.memoryGb)
    }
    return `the process exited with code ${workload.exitCode ?? 'none (killed)'}`
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
}
