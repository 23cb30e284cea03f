import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { Config } from '../config/schema.js'
import { ConfigError } from '../config/load-config.js'
import { ImagePrepull } from '../control/image-prepull.js'
import { JobSweeper } from '../control/job-sweeper.js'
import { WebhookDispatcher } from '../control/webhook-dispatcher.js'
import { WorkerAutoscaler } from '../control/worker-autoscaler.js'
import { loopbackPortOf } from '../control/worker-workload.js'
import { workerHourlyPrice } from '../domain/billing/usage.js'
import { EgressGuard, type HostResolver } from '../domain/egress/egress-guard.js'
import {
  EgressPolicy,
  parseAllowList,
  selfReader,
  type Listener,
} from '../domain/egress/egress-policy.js'
import { MODEL_CODE_PATH } from '../domain/models/model-registry.js'
import { EndpointService } from '../domain/serverless/endpoint-service.js'
import { JobService } from '../domain/serverless/job-service.js'
import { ReleaseService } from '../domain/serverless/release-service.js'
import { WebhookService } from '../domain/serverless/webhook-service.js'
import { deriveWorkerKeySecret, WorkerKeyService } from '../domain/serverless/worker-keys.js'
import { WORKER_PRESENCE_WINDOW_MS, WorkerPresence } from '../domain/serverless/worker-presence.js'
import { WorkerService } from '../domain/serverless/worker-service.js'
import { CROSS_REPLICA_POLL_MS } from '../queue/pg-wake-ups.js'
import { KyselyJobQueue } from '../queue/kysely-job-queue.js'
import { KyselyWebhookDeliveries } from '../queue/kysely-webhook-deliveries.js'
import { place } from '../scheduler/core/placement.js'
import { isAppError } from '../shared/app-error.js'
import type { Clock } from '../shared/clock.js'
import { interfaceAddresses } from '../shared/host-addresses.js'
import { KyselyEndpointRepo } from '../store/endpoint-repo.js'
import { KyselyHostImageRepo } from '../store/host-image-repo.js'
import { KyselyReleaseRepo } from '../store/release-repo.js'
import { KyselyStartBackoffRepo } from '../store/start-backoff-repo.js'
import { KyselyWorkerRepo } from '../store/worker-repo.js'
import { MODEL_CODE_DIR } from './model-wiring.js'
import type { PlatformContext, ServerlessParts } from './platform-context.js'
import { endPollsKey, WEBHOOKS_DUE_KEY } from './replica-wiring.js'
import { workerHostRules } from './worker-hosts.js'

/**
 * Serverless (docs/serverless-endpoints.md, docs/job-api.md): endpoints and their releases and
 * worker keys, the job queue with its sweeper and webhooks, and the workers the platform runs
 * for endpoints (the autoscaler), on every host with the host's driver (worker-hosts.ts says
 * which hosts may take which endpoint's workers). A host that drains has its workers moved off.
 */
export function wireServerless(
  context: PlatformContext,
  options: { resolveHost: HostResolver },
): ServerlessParts {
  const { config, store, clock, logger, parts } = context
  const { wakeUps } = parts.replicas
  const endpointRepo = new KyselyEndpointRepo(store.db)
  const releaseRepo = new KyselyReleaseRepo(store.db)
  const pods = parts.pods
  const endpoints: EndpointService = new EndpointService({
    repo: endpointRepo,
    catalog: parts.fleet.catalog,
    references: {
      template: (accountId, id) => pods.templates.resolve(accountId, id),
      registryExists: (accountId, id) => pods.registries.exists(accountId, id),
      networkVolume: (accountId, id) => pods.volumes.find(accountId, id),
    },
    clock,
    jobApiBaseUrl: context.serverUrl,
    releases: releaseRepo,
    // The autoscaler is made below; an update reaches this only once the server is up.
    onNewVersion: (endpoint) => autoscaler.drainOlderVersions(endpoint),
    onImageWanted: (endpoint) => imagePulls.forEndpoint(endpoint),
    deleteJobsOf: (endpointId) => {
      // Its worker key must stop verifying at once, not when the verification cache expires.
      workerKeys.forget()
      return queue.deleteEndpointJobs(endpointId)
    },
  })
  const workerKeys = new WorkerKeyService({
    generations: endpointRepo,
    ownEndpoint: (accountId, id) => endpoints.get(accountId, id),
    secret: deriveWorkerKeySecret(parts.accounts.encryptionKey),
  })
  const deliveries = new KyselyWebhookDeliveries({ db: store.db, dialect: store.dialect })
  const webhookEgress = egressGuardFor(config, {
    listeners: context.listeners,
    resolveHost: options.resolveHost,
    clock,
  })
  const dispatcher = new WebhookDispatcher({
    timers: context.timers,
    deliveries,
    egress: webhookEgress,
    clock,
    logger,
    retryDelayMs: config.webhooks.retryDelayMs,
    timeoutMs: config.webhooks.timeoutMs,
    onAttempt: context.metrics.onWebhookAttempt,
  })
  const queue = new KyselyJobQueue({
    db: store.db,
    dialect: store.dialect,
    clock,
    // A job's s3Config holds the caller's storage secret: sealed like registry passwords.
    secrets: parts.accounts.box,
    onWebhookQueued: () => {
      dispatcher.nudge()
      // The dispatcher runs on the leader, which may be another replica.
      wakeUps?.notify(WEBHOOKS_DUE_KEY)
    },
    ...(wakeUps ? { wakeUps, pollIntervalMs: CROSS_REPLICA_POLL_MS } : {}),
  })
  const presence = new WorkerPresence(
    clock,
    WORKER_PRESENCE_WINDOW_MS,
    config.workers.pingIntervalMs,
  )
  const workerRepo = new KyselyWorkerRepo(store.db)
  const autoscaler = workerAutoscalerOf(context, {
    endpointRepo,
    workerRepo,
    queue,
    presence,
    workerKeys,
  })
  const imagePulls = imagePrepullOf(context, () => endpointRepo.listAll())
  parts.hosts.drainHooks.push(async (hostId) => {
    logger.info({ hostId }, 'host draining: its serverless workers are moved off')
    autoscaler.nudge()
  })
  const jobs = new JobService({
    endpoints,
    queue,
    presence,
    roster: autoscaler,
    clock,
    leaseMs: config.workers.jobLeaseMs,
    billing: parts.billing.guard,
    webhookEgress,
    onJobFinished: (job) => parts.models.service.onJobCompleted(job),
    onQueued: (endpointId) => autoscaler.jobQueued(endpointId),
    events: context.metrics.jobs,
    ...(context.tracing ? { tracing: context.tracing } : {}),
  })
  return {
    endpoints,
    releases: new ReleaseService({
      endpoints,
      releases: releaseRepo,
      workers: workerRepo,
      userOf: async (accountId) =>
        (await parts.accounts.accounts.primaryUser(accountId))?.id ?? null,
    }),
    workerKeys,
    queue,
    presence,
    workerRepo,
    autoscaler,
    imagePulls,
    jobs,
    workers: new WorkerService({
      endpoints,
      repo: workerRepo,
      observer: autoscaler,
      clock,
      events: pods.podStore.events,
    }),
    webhooks: new WebhookService({ endpoints, queue, deliveries }),
    webhookEgress,
    dispatcher,
    sweeper: new JobSweeper({
      timers: context.timers,
      queue,
      clock,
      logger,
      leaseMs: config.workers.jobLeaseMs,
      events: context.metrics.jobs,
      ...(context.tracing ? { tracing: context.tracing } : {}),
    }),
  }
}

/** The autoscaler of the platform's workers (docs/serverless-workers.md). */
function workerAutoscalerOf(
  context: PlatformContext,
  serverless: Pick<ServerlessParts, 'queue' | 'presence' | 'workerKeys' | 'workerRepo'> & {
    endpointRepo: KyselyEndpointRepo
  },
): WorkerAutoscaler {
  const { config, store, clock, logger, parts } = context
  const { fleet, board, driverFor, drivers } = parts.fleet
  const { podStore, volumes, volumeStorage, registries, secrets } = parts.pods
  const billing = parts.billing
  const jobApiBaseUrl = () => config.workers.jobApiUrl.replace(/\/+$/, '') || context.serverUrl()
  return new WorkerAutoscaler({
    timers: context.timers,
    endpoints: serverless.endpointRepo,
    workers: serverless.workerRepo,
    exclusiveCapacity: (work) =>
      podStore.exclusive((unit) =>
        work(
          unit.allocations,
          (accountId) => unit.quotaUse(accountId),
          (accountId) => unit.accountPools(accountId),
        ),
      ),
    allocations: podStore.allocations,
    quotas: parts.accounts.quotas,
    fleet,
    offeredHosts: () => board.offeredHosts(),
    place,
    ...workerHostRules(context, jobApiBaseUrl),
    driverFor,
    drivers,
    queue: serverless.queue,
    presence: serverless.presence,
    workerKeyFor: (endpointId) => serverless.workerKeys.current(endpointId),
    jobApiBaseUrl,
    networkVolume: async (accountId, volumeId) => {
      const volume = await volumes.find(accountId, volumeId)
      return (
        volume && {
          dataCenterId: volume.dataCenterId,
          path: volumeStorage.path(volumeId, volume.dataCenterId),
          ...(volumeStorage.isLocal(volume.dataCenterId) ? { boundGb: volume.sizeGb } : {}),
        }
      )
    },
    registryCredentials: (accountId, registryId) => registries.credentials(accountId, registryId),
    resolveEnv: (accountId, env) => secrets.resolveEnv(accountId, env),
    dataDir: config.dataDir,
    clock,
    logger,
    settings: config.workers,
    billing: {
      outOfCredits: async (accountId) => {
        const credit = await billing.creditRepo.credit(accountId)
        return credit !== undefined && (await billing.guard.outOfCredits(credit))
      },
      refusal: async (accountId, usdPerHour) => {
        try {
          await billing.guard.assertWithinSpendLimit(
            accountId,
            usdPerHour,
            'start a serverless worker',
          )
          return null
        } catch (error) {
          if (isAppError(error)) return error.detail
          throw error
        }
      },
    },
    hourlyPrice: (candidate, endpoint) =>
      workerHourlyPrice(fleet.prices, {
        gpuTypeId: candidate.gpuTypeId,
        cpuFlavorId: candidate.cpuFlavorId,
        gpuCount: endpoint.gpu?.count ?? 0,
        vcpus: candidate.request.compute.kind === 'cpu' ? candidate.request.compute.vcpuCount : 0,
      }),
    startBackoffs: new KyselyStartBackoffRepo(store.db),
    endPolls: (endpointId, workerId): Promise<void> => {
      // The worker's polls may be held by another replica: those end too, unawaited.
      parts.replicas.wakeUps?.notify(endPollsKey(endpointId, workerId))
      return parts.serverless.jobs.endPolls(endpointId, workerId)
    },
    // The public models' workers run podyard's own build, shown to them read-only.
    platformMounts: (endpoint) =>
      endpoint.accountId === parts.accounts.modelsAccount.id
        ? [
            {
              hostPath: MODEL_CODE_DIR,
              containerPath: MODEL_CODE_PATH,
              kind: 'platform',
              readOnly: true,
            },
          ]
        : [],
    // A public model's worker calls the server the operator configured for it (config, not a
    // tenant's input): on this machine's loopback, its own network namespace must let it through.
    platformLoopbackPorts: (endpoint) =>
      endpoint.accountId === parts.accounts.modelsAccount.id &&
      endpoint.env.PODYARD_MODEL_SERVER_URL !== undefined
        ? loopbackPortOf(endpoint.env.PODYARD_MODEL_SERVER_URL)
        : [],
    // A worker's system log shares the pods' event table (worker ids are pod-shaped).
    events: podStore.events,
    onScale: context.metrics.onScale,
    sweptJobs: {
      events: context.metrics.jobs,
      ...(context.tracing ? { tracing: context.tracing } : {}),
    },
  })
}

/** The leader looks for images still to pull ahead of time at most this often. */
const IMAGE_CATCH_UP_MIN_INTERVAL_MS = 5_000

/**
 * Images pulled ahead of time (docs/fleet.md, "Images ahead of time"), on the hosts where the
 * autoscaler could place an endpoint's workers: the same offered hosts, placement and rules.
 */
function imagePrepullOf(
  context: PlatformContext,
  endpoints: () => Promise<readonly Endpoint[]>,
): ImagePrepull {
  const { config, store, clock, logger, parts } = context
  const { fleet, board, driverFor } = parts.fleet
  const jobApiBaseUrl = () => config.workers.jobApiUrl.replace(/\/+$/, '') || context.serverUrl()
  const rules = workerHostRules(context, jobApiBaseUrl)
  return new ImagePrepull({
    repo: new KyselyHostImageRepo(store.db),
    hosts: () => board.offeredHosts(),
    dataCenters: () => fleet.dataCenters,
    driverFor,
    unavailable: async (endpoint) =>
      endpoint ? rules.unavailableHosts!(endpoint) : board.unplaceable(),
    place,
    accountPools: (accountId) => parts.accounts.pools.poolsOf(accountId),
    registryCredentials: (accountId, registryId) =>
      parts.pods.registries.credentials(accountId, registryId),
    clock,
    logger,
    endpoints,
    catchUpIntervalMs: Math.max(config.hosts.probeIntervalMs, IMAGE_CATCH_UP_MIN_INTERVAL_MS),
    timers: context.timers,
  })
}

/**
 * The egress policy of webhooks (docs/security.md "Egress policy"): the operator's allow-list,
 * and this server (its interfaces, its public IP, where it listens) as a destination never sent to.
 */
export function egressGuardFor(
  config: Pick<Config, 'publicIp' | 'host'> & {
    webhooks: Pick<Config['webhooks'], 'allowInternal'>
  },
  sources: { listeners: () => readonly Listener[]; resolveHost: HostResolver; clock: Clock },
): EgressGuard {
  const { allow, problems } = parseAllowList(config.webhooks.allowInternal)
  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration: webhooks.allowInternal: ${problems.join('; ')}`)
  }
  const self = selfReader({
    interfaces: interfaceAddresses(),
    fixed: [config.publicIp, config.host],
    listeners: sources.listeners,
  })
  return new EgressGuard({
    policy: new EgressPolicy({ allow, self }),
    resolve: sources.resolveHost,
    clock: sources.clock,
    settingName: 'webhooks.allowInternal',
  })
}
