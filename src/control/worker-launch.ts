import type { Logger } from 'pino'
import type { SecretEnvResolver } from '../domain/secrets/ports.js'
import type { Fleet, Host } from '../domain/catalog/fleet.js'
import type { PlacementPolicy } from '../domain/catalog/placement.js'
import type { AllocationRepo } from '../domain/catalog/ports.js'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { ManagedWorker, WorkerRepo } from '../domain/serverless/worker.js'
import { workerCandidates, type WorkerCandidate } from '../domain/serverless/worker-placement.js'
import type { RuntimeDriver, WorkloadMount } from '../runtime/driver.js'
import { hasQuota, type QuotaUse } from '../domain/quotas/quota.js'
import type { QuotaService } from '../domain/quotas/quota-service.js'
import type { Clock } from '../shared/clock.js'
import { newId } from '../shared/ids.js'
import { workerDiskPath, workerWorkloadOf } from './worker-workload.js'

/** What placing and starting a worker needs (part of WorkerAutoscalerDeps). */
export interface WorkerLaunchDeps {
  workers: WorkerRepo
  /**
   * Runs `work` with the allocations in a transaction no other capacity taker overlaps, and
   * what an account holds as counted in it (for its quotas).
   */
  exclusiveCapacity<T>(
    work: (
      allocations: AllocationRepo,
      quotaUse: (accountId: string) => Promise<QuotaUse>,
      accountPools: (accountId: string) => Promise<string[]>,
    ) => Promise<T>,
  ): Promise<T>
  /**
   * The admin's quotas (docs/billing.md, "Quotas"): a worker beyond the account's workers or
   * GPUs quota is not launched; it stays PENDING (THROTTLED) with the reason.
   */
  quotas?: QuotaService
  fleet: Fleet
  /**
   * The fleet's hosts as they offer themselves (what their engines reported, the declaration
   * a ceiling); the declared hosts when absent.
   */
  offeredHosts?: () => readonly Host[]
  place: PlacementPolicy
  /**
   * Hosts that take no new worker of this endpoint now, each with why (DOWN, cordoned,
   * draining, a remote host that cannot reach a loopback job API, a host whose driver cannot
   * run this endpoint's workers): placement names them.
   */
  unavailableHosts?: (endpoint: Endpoint) => Promise<Record<string, string>>
  /** GPU indices per host withdrawn for their health (docs/gpus.md): no worker gets one. */
  withdrawnGpus?: () => Readonly<Record<string, readonly number[]>>
  /**
   * Whether a worker on this host joins the host's network to reach the job API at `baseUrl`
   * (a container on this machine's engine, when the address is a loopback one).
   */
  sharesHostNetwork?: (hostId: string, baseUrl: string) => boolean
  driverFor: (hostId: string) => RuntimeDriver
  /** The endpoint's current worker key and its generation. */
  workerKeyFor: (endpointId: string) => Promise<{ workerKey: string; generation: number }>
  /** The job API's base URL as workers reach it. */
  jobApiBaseUrl: () => string
  /**
   * A network volume of the account: its data center and host directory, and its size where
   * a driver may bound it (on this machine's storage, not a data center's shared one).
   */
  networkVolume: (
    accountId: string,
    volumeId: string,
  ) => Promise<{ dataCenterId: string; path: string; boundGb?: number } | undefined>
  registryCredentials: (
    accountId: string,
    registryId: string,
  ) => Promise<{ username: string; password: string } | undefined>
  /** Resolves the account's secrets referenced from the endpoint's env; throws naming a missing one. */
  resolveEnv?: SecretEnvResolver
  dataDir: string
  clock: Clock
  logger: Logger
  /**
   * The billing policy (docs/billing.md, "Enforcement"): whether the account is out of credits
   * (its workers are stopped once free, none is started), and why a worker of this hourly price
   * may not start now (over the spend limit), or null.
   */
  billing?: {
    outOfCredits(accountId: string): Promise<boolean>
    refusal(accountId: string, addedUsdPerHour: number): Promise<string | null>
  }
  /** The hourly price of a worker on a candidate's compute, for the spend limit. */
  hourlyPrice?: (candidate: WorkerCandidate, endpoint: Endpoint) => number
  /** Read-only mounts the platform adds to an endpoint's workers (public models: its code). */
  platformMounts?: (endpoint: Endpoint) => WorkloadMount[]
  /** Loopback ports the platform's own workers reach (public models: their server's). */
  platformLoopbackPorts?: (endpoint: Endpoint) => number[]
  /**
   * Why the endpoint's workers may not run (workload-isolation.ts: no sandbox here, or a limit
   * not enforced; `volumeDataCenters`: where its volumes are), or null. They stay THROTTLED with the reason, never placed nor charged.
   */
  isolationRefusal?: (
    endpoint: Endpoint,
    volumeDataCenters: readonly string[],
  ) => Promise<string | null>
  /** What happened to a worker, for people: its `system` log (docs/serverless-workers.md). */
  events?: { append(workerId: string, ts: string, line: string): Promise<void> }
}

/** What became of a PENDING worker the autoscaler tried to launch. */
export type LaunchOutcome =
  /** Placed, stored STARTING and its workload started. */
  | { kind: 'started'; worker: ManagedWorker }
  /** Not placed (no room, over the spend limit): it stays PENDING with this reason. */
  | { kind: 'throttled'; reason: string }
  /** Placed and stored STARTING, but its workload could not start. */
  | { kind: 'failed'; worker: ManagedWorker; reason: string }

/**
 * Places a PENDING worker like a pod (its candidates in order, under the capacity lock) and
 * starts its workload (docs/serverless-workers.md, "What a worker gets").
 */
export async function launchWorker(
  deps: WorkerLaunchDeps,
  pingIntervalMs: number,
  endpoint: Endpoint,
  worker: ManagedWorker,
): Promise<LaunchOutcome> {
  const volumes: Array<{ id: string; dataCenterId: string; path: string; boundGb?: number }> = []
  for (const id of endpoint.networkVolumes) {
    const volume = await deps.networkVolume(endpoint.accountId, id)
    if (volume) volumes.push({ id, ...volume })
  }
  const candidates = workerCandidates(
    endpoint,
    volumes.map((v) => v.dataCenterId),
  )
  // Checked before placement, at the price of the first candidate (the preferred compute):
  // the check reads other tables, which must not wait inside the capacity transaction.
  const first = candidates[0]
  const unisolated = await deps.isolationRefusal?.(
    endpoint,
    volumes.map((v) => v.dataCenterId),
  )
  if (unisolated) return { kind: 'throttled', reason: unisolated }
  const refusal =
    first && deps.billing && deps.hourlyPrice
      ? await deps.billing.refusal(endpoint.accountId, deps.hourlyPrice(first, endpoint))
      : null
  if (refusal !== null) return { kind: 'throttled', reason: refusal }
  // Read before the capacity transaction, which must not wait for other reads.
  const unavailable = (await deps.unavailableHosts?.(endpoint)) ?? {}
  const limits = await deps.quotas?.limits(endpoint.accountId)
  const now = deps.clock.now().toISOString()
  const placed = await deps.exclusiveCapacity(async (allocations, quotaUse, poolsOf) => {
    // A host in a pool takes the worker only when the endpoint's account is bound to it.
    const accountPools = await poolsOf(endpoint.accountId)
    const use =
      deps.quotas && limits && hasQuota(limits) ? await quotaUse(endpoint.accountId) : null
    const snapshot = {
      hosts: deps.offeredHosts?.() ?? deps.fleet.hosts,
      dataCenters: deps.fleet.dataCenters,
      allocations: await allocations.list(),
      unavailable,
      withdrawnGpus: deps.withdrawnGpus?.() ?? {},
    }
    const refusals: string[] = []
    const quotaRefusals: string[] = []
    for (const candidate of candidates) {
      if (use && limits && deps.quotas) {
        const { compute } = candidate.request
        const overQuota = deps.quotas.refusal(
          limits,
          use,
          { workers: 1, gpus: compute.kind === 'gpu' ? compute.gpuCount : 0 },
          `a worker of endpoint ${endpoint.id}`,
        )
        if (overQuota !== null) {
          quotaRefusals.push(overQuota)
          continue
        }
      }
      const result = deps.place(snapshot, { ...candidate.request, accountPools })
      if (!result.ok) {
        refusals.push(result.detail)
        continue
      }
      const { placement } = result
      await allocations.insert({
        id: newId.allocation(),
        hostId: placement.hostId,
        ownerKind: 'worker',
        ownerId: worker.id,
        gpuCount: placement.gpuIndices.length,
        gpuIndices: placement.gpuIndices,
        vcpus: placement.vcpus,
        memoryGb: placement.memoryGb,
        diskGb: placement.diskGb,
        createdAt: now,
      })
      return { ok: true as const, candidate, placement }
    }
    return { ok: false as const, refusals, quotaRefusals }
  })
  if (!placed.ok) {
    // Over a quota on every candidate: waiting for capacity would not help, the quota says why.
    const reason =
      candidates.length === 0
        ? 'no data center satisfies both the endpoint and its network volumes'
        : placed.refusals.length === 0 && placed.quotaRefusals.length > 0
          ? placed.quotaRefusals[0]!
          : `no capacity: ${placed.refusals.slice(0, 3).join('; ')}${placed.refusals.length > 3 ? `; and ${placed.refusals.length - 3} more` : ''}`
    return { kind: 'throttled', reason }
  }
  const { candidate, placement } = placed
  const key = await deps.workerKeyFor(endpoint.id)
  const startedAt = deps.clock.now().toISOString()
  const launched: ManagedWorker = {
    ...worker,
    phase: 'STARTING',
    reason: null,
    hostId: placement.hostId,
    dataCenterId: placement.dataCenterId,
    gpuTypeId: candidate.gpuTypeId,
    cpuFlavorId: candidate.cpuFlavorId,
    gpuCount: placement.gpuIndices.length,
    gpuIndices: placement.gpuIndices,
    vcpus: placement.vcpus,
    memoryGb: placement.memoryGb,
    image: endpoint.image,
    keyGeneration: key.generation,
    startedAt,
    phaseChangedAt: startedAt,
  }
  await deps.workers.update(launched)
  const baseUrl = deps.jobApiBaseUrl()
  const hostNetwork = deps.sharesHostNetwork?.(placement.hostId, baseUrl) ?? false
  await deps.events
    ?.append(
      launched.id,
      startedAt,
      `placed on host ${placement.hostId} in ${placement.dataCenterId}; starting version ${endpoint.version}` +
        (hostNetwork
          ? `, in the host's network (the job API address ${baseUrl} is a loopback one)`
          : ''),
    )
    .catch((error: unknown) =>
      deps.logger.warn({ err: error, workerId: launched.id }, 'could not record a worker event'),
    )
  try {
    const volume = volumes.find((v) => v.dataCenterId === placement.dataCenterId)
    const registryAuth = endpoint.registry
      ? await deps.registryCredentials(endpoint.accountId, endpoint.registry)
      : undefined
    // A missing secret throws: the worker fails with the secret's name (never a value).
    const env = deps.resolveEnv
      ? await deps.resolveEnv(endpoint.accountId, endpoint.env)
      : endpoint.env
    const spec = workerWorkloadOf(endpoint, launched, {
      env,
      baseUrl,
      hostNetwork,
      workerKey: key.workerKey,
      pingIntervalMs,
      diskPath: workerDiskPath(deps.dataDir, worker.id),
      ...(volume
        ? {
            networkVolume: {
              id: volume.id,
              path: volume.path,
              ...(volume.boundGb ? { sizeGb: volume.boundGb } : {}),
            },
          }
        : {}),
      ...(registryAuth ? { registryAuth } : {}),
      platformMounts: deps.platformMounts?.(endpoint) ?? [],
      platformLoopbackPorts: deps.platformLoopbackPorts?.(endpoint) ?? [],
    })
    await deps.driverFor(placement.hostId).start(spec)
    deps.logger.info(
      {
        endpointId: endpoint.id,
        workerId: worker.id,
        hostId: placement.hostId,
        version: endpoint.version,
      },
      'worker started',
    )
    return { kind: 'started', worker: launched }
  } catch (error) {
    return {
      kind: 'failed',
      worker: launched,
      reason: `could not start: ${(error as Error).message}`,
    }
  }
}
