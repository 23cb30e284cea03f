/**
 * The composition root of the server and the store: config -> store -> migrate -> services ->
 * api -> listen. main.ts (the CLI entry) loads this module only for the commands that need it,
 * so commands that only talk to a running server start in a fifth of the time.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { hostname, userInfo } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { pino, type Logger } from 'pino'
import { parse as parseYaml } from 'yaml'
import { buildApp, jobLimiterOf } from './api/app.js'
import type { StoreCommands } from './cli/program.js'
import { resolveEncryptionKey } from './config/encryption-key.js'
import type { Config } from './config/schema.js'
import { CreditService } from './domain/billing/credit-service.js'
import { KyselyCreditRepo } from './store/credit-repo.js'
import { KyselyWorkerRepo } from './store/worker-repo.js'
import { KyselyUsageRepo } from './store/usage-repo.js'
import { BillingMeter } from './control/billing-meter.js'
import { BillingGuard, runningSpendPerHour } from './domain/billing/billing-guard.js'
import { workerHourlyPrice } from './domain/billing/usage.js'
import { BillingReportService } from './domain/billing/billing-reports.js'
import { AccountService } from './domain/accounts/account-service.js'
import { JobSweeper } from './control/job-sweeper.js'
import { WorkerAutoscaler } from './control/worker-autoscaler.js'
import { isolationRefusal, type IsolationPolicy } from './control/workload-isolation.js'
import { WebhookDispatcher } from './control/webhook-dispatcher.js'
import { PodLifecycle } from './control/pod-lifecycle.js'
import { CatalogService } from './domain/catalog/catalog-service.js'
import { demoFleet, noneFleet } from './domain/catalog/demo-fleet.js'
import {
  FleetError,
  parseFleet,
  withLocalHost,
  type Fleet,
  type HostDriver,
} from './domain/catalog/fleet.js'
import { PodService } from './domain/pods/pod-service.js'
import {
  podsUsing,
  usesNetworkVolume,
  usesRegistry,
  usesTemplate,
} from './domain/pods/pod-users.js'
import { RegistryService } from './domain/registries/registry-service.js'
import { EndpointService } from './domain/serverless/endpoint-service.js'
import { JobService } from './domain/serverless/job-service.js'
import { WORKER_PRESENCE_WINDOW_MS, WorkerPresence } from './domain/serverless/worker-presence.js'
import { WorkerService } from './domain/serverless/worker-service.js'
import { WebhookService } from './domain/serverless/webhook-service.js'
import { EgressGuard, type HostResolver } from './domain/egress/egress-guard.js'
import {
  EgressPolicy,
  parseAllowList,
  selfReader,
  type Listener,
} from './domain/egress/egress-policy.js'
import { interfaceAddresses, resolveWithSystem } from './shared/host-addresses.js'
import { deriveWorkerKeySecret, WorkerKeyService } from './domain/serverless/worker-keys.js'
import {
  EncryptionKeyFormatError,
  parseEncryptionKey,
  SecretBox,
} from './domain/registries/secret-box.js'
import { builtinImageCommands } from './domain/templates/builtin-templates.js'
import { TemplateService } from './domain/templates/template-service.js'
import { VolumeService } from './domain/volumes/volume-service.js'
import {
  buildModelRegistry,
  MODEL_CODE_PATH,
  ModelConfigError,
  modelImageCommands,
} from './domain/models/model-registry.js'
import { ModelService } from './domain/models/model-service.js'
import { ensurePublicModelsAccount } from './domain/models/models-account.js'
import { deriveObjectUrlSecret, ObjectUrlSigner } from './domain/models/signed-urls.js'
import { LocalObjectStore } from './store/local-object-store.js'
import { S3ObjectStore } from './store/s3-object-store.js'
import { ConfigError } from './config/load-config.js'
import type { ObjectStore } from './domain/models/ports.js'
import { KyselyModelJobRepo } from './store/model-job-repo.js'
import { discoverLocalHost } from './runtime/host-discovery.js'
import type { RuntimeDriver, WorkloadIsolation } from './runtime/driver.js'
import { ProcessDriver } from './runtime/process/process-driver.js'
import { DockerDriver, DockerEngineUnreachableError } from './runtime/docker/docker-driver.js'
import { loadServerId } from './runtime/docker/server-id.js'
import { DirectoryVolumeStorage } from './runtime/volume-directories.js'
import { place } from './scheduler/core/placement.js'
import { AppError, isAppError } from './shared/app-error.js'
import { systemClock, type Clock } from './shared/clock.js'
import { KyselyAccountRepo } from './store/account-repo.js'
import { KyselyAllocationRepo } from './store/allocation-repo.js'
import { KyselyEndpointRepo } from './store/endpoint-repo.js'
import { KyselyReleaseRepo } from './store/release-repo.js'
import { ReleaseService } from './domain/serverless/release-service.js'
import { ClusterService } from './domain/clusters/cluster-service.js'
import { KyselyClusterRepo } from './store/cluster-repo.js'
import { KyselyApiKeyRepo } from './store/api-key-repo.js'
import { EncryptionKeyMismatchError, verifyEncryptionKey } from './store/encryption-check.js'
import { KyselyNetworkVolumeRepo } from './store/network-volume-repo.js'
import { podStoreOf } from './store/pod-repo.js'
import { KyselyRegistryRepo } from './store/registry-repo.js'
import { KyselyTemplateRepo } from './store/template-repo.js'
import { DatabaseTooNewError, isMigrated, migrateToLatest } from './store/migrate.js'
import { openStore, type Store } from './store/open-store.js'
import { KyselyJobQueue } from './queue/kysely-job-queue.js'
import { KyselyWebhookDeliveries } from './queue/kysely-webhook-deliveries.js'
import { CROSS_REPLICA_POLL_MS, PgWakeUps } from './queue/pg-wake-ups.js'
import { LeaderElection } from './control/leader-election.js'
import { KyselyLeaseRepo } from './store/lease-repo.js'
import { SharedJobLimits } from './store/shared-job-limits.js'
import { SharedWorkerPresence } from './store/shared-worker-presence.js'
import { KyselyStartBackoffRepo } from './store/start-backoff-repo.js'
import { acquireStartupLock } from './store/startup-lock.js'
import { lockForServing, StoreInUseError, type ServingLock } from './store/serving-lock.js'

export const version: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string
  }
).version

export interface Platform {
  app: FastifyInstance
  store: Store
  fleet: Fleet
  lifecycle: PodLifecycle
  autoscaler: WorkerAutoscaler
  /** The billing meter (docs/billing.md); tests call its tick() on a manual clock. */
  meter: BillingMeter
  /** The runtime drivers of this server's hosts. */
  drivers: RuntimeDriver[]
  /** Base URL the server listens on. */
  url: string
  /** What `serve` prints once it is ready (includes a generated admin key, if any). */
  banner: string
  /** Set only on the first start of an empty store without PODYARD_ADMIN_KEY. */
  generatedAdminKey?: string
  close(): Promise<void>
}

export interface StartOptions {
  clock?: Clock
  logger?: Logger
  /** Resolves host names for the egress policy; default the system's resolver. */
  resolveHost?: HostResolver
}

export async function loadFleet(
  setting: string,
  options: { localDriver?: HostDriver } = {},
): Promise<Fleet> {
  const declared =
    setting === 'demo'
      ? demoFleet
      : setting === 'none'
        ? noneFleet
        : parseFleet(parseYaml(readFileSync(setting, 'utf8')), setting)
  return withLocalHost(
    declared,
    await discoverLocalHost(),
    options.localDriver ? { driver: options.localDriver } : {},
  )
}

/**
 * The runtime drivers of the fleet's hosts: one process driver (`process` hosts, and simulated
 * hosts that do not say `driver: docker`) and, for hosts that say `driver: docker`, a
 * DockerDriver on the one engine, checked to answer before the server starts. Simulated docker
 * hosts get their own instance that names their virtual GPUs in the env instead of requesting
 * devices; both see the same containers (one server id), so listing through either is the same.
 */
async function runtimeDriversOf(
  config: Readonly<Config>,
  fleet: Fleet,
  processDriver: ProcessDriver,
): Promise<{ driverFor: (hostId: string) => RuntimeDriver; drivers: RuntimeDriver[] }> {
  const dockerHosts = fleet.hosts.filter((h) => h.driver === 'docker')
  if (dockerHosts.length === 0) return { driverFor: () => processDriver, drivers: [processDriver] }
  const options = {
    serverId: loadServerId(config.dataDir),
    ...(config.docker.socketPath ? { socketPath: config.docker.socketPath } : {}),
    diskLimit: config.docker.diskLimit,
  }
  const byHost = new Map<string, DockerDriver>()
  const drivers: RuntimeDriver[] = [processDriver]
  for (const simulatedGpus of [false, true]) {
    const hosts = dockerHosts.filter((h) => h.simulated === simulatedGpus)
    if (hosts.length === 0) continue
    const docker = new DockerDriver({ ...options, simulatedGpus })
    await docker.ping()
    drivers.push(docker)
    for (const host of hosts) byHost.set(host.id, docker)
  }
  return { driverFor: (hostId) => byHost.get(hostId) ?? processDriver, drivers }
}

/** Opens and migrates the store; refuses one migrated by a newer podyard. */
export async function openMigratedStore(
  config: Readonly<Config>,
  logger?: Pick<Logger, 'warn'>,
  /** A serving platform checkpoints a SQLite file's WAL on a thread of its own. */
  options: { serving?: boolean } = {},
): Promise<{ store: Store; applied: string[] }> {
  if (config.storeUrl.startsWith('sqlite:')) mkdirSync(config.dataDir, { recursive: true })
  const store = await openStore(config.storeUrl, {
    onIdleConnectionError: (error) =>
      logger?.warn(
        { err: error },
        'PostgreSQL closed an idle connection; the next query reconnects',
      ),
    ...(options.serving
      ? {
          checkpointInBackground: true,
          onCheckpointError: (message: string) =>
            logger?.warn({ error: message }, 'the SQLite checkpoint thread reported an error'),
        }
      : {}),
  })
  try {
    return { store, applied: await migrateToLatest(store) }
  } catch (error) {
    await store.close()
    throw error
  }
}

function accountServiceOf(store: Store, clock: Clock): AccountService {
  return new AccountService(new KyselyAccountRepo(store.db), new KyselyApiKeyRepo(store.db), clock)
}

/**
 * The box that seals registry passwords, with the configured key or the data dir's key file
 * (generated on first start); refuses to start when the key is not the database's. The key
 * itself is returned too: worker keys are derived from it (worker-keys.ts).
 */
async function secretBoxFor(
  config: Readonly<Config>,
  store: Store,
  logger: Logger,
): Promise<{ box: SecretBox; key: Buffer }> {
  const resolved = resolveEncryptionKey({
    configured: config.encryptionKey,
    dataDir: config.dataDir,
  })
  if (resolved.source === 'generated') {
    logger.info({ file: resolved.file }, 'generated the encryption key for registry passwords')
  }
  const key = parseEncryptionKey(resolved.key)
  const box = new SecretBox(key)
  await verifyEncryptionKey(store.db, box, resolved.file ? { keyFile: resolved.file } : {})
  return { box, key }
}

function serverUser(): string {
  try {
    return userInfo().username
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`
  }
}

/** The banner's lines on how the process driver's workloads are isolated (docs/security.md). */
function sandboxBanner(isolation: WorkloadIsolation, setting: Config['sandbox']): string[] {
  if (isolation.level !== 'none') return [`  sandbox       ${isolation.detail}`]
  const user = serverUser()
  if (setting === 'none') {
    return [
      `  sandbox       NONE (sandbox: none): every account's pods and workers run as ${user},`,
      '                and can read the data directory and signal this server',
    ]
  }
  if (setting === 'bubblewrap') {
    return [
      `  sandbox       NONE: ${isolation.detail}`,
      '                no pod or worker of the process driver starts until it works',
    ]
  }
  return [
    `  sandbox       NONE: ${isolation.detail}`,
    `                only the admin account's pods and workers run (unsandboxed, as ${user});`,
    "                other accounts' are refused: install bubblewrap, use the docker driver,",
    '                or set sandbox: none to accept the risk (docs/security.md)',
  ]
}

function fleetSummary(fleet: Fleet): string {
  const gpuTypes = new Set(fleet.hosts.flatMap((h) => (h.gpu ? [h.gpu.typeId] : [])))
  const gpus = fleet.hosts.reduce((n, h) => n + (h.gpu?.count ?? 0), 0)
  const simulated = fleet.hosts.filter((h) => h.simulated).length
  return (
    `${fleet.hosts.length} hosts (${simulated} simulated) in ${fleet.dataCenters.length} data centers, ` +
    `${gpus} GPUs of ${gpuTypes.size} types`
  )
}

export async function startPlatform(
  config: Readonly<Config>,
  options: StartOptions = {},
): Promise<Platform> {
  const clock = options.clock ?? systemClock
  const logger = options.logger ?? pino({ level: config.logLevel })
  const servingLocks = lockSqliteStore(config)
  let store: Store
  let applied: string[]
  try {
    ;({ store, applied } = await openMigratedStore(config, logger, { serving: true }))
  } catch (error) {
    for (const lock of servingLocks) lock.release()
    throw error
  }
  // Replicas starting together on an empty database create the accounts one after the other.
  let releaseStartup: (() => Promise<void>) | undefined
  try {
    releaseStartup = await acquireStartupLock(store)
    if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations')
    const accounts = accountServiceOf(store, clock)
    const credits = new CreditService(new KyselyCreditRepo(store.db), clock)
    const admin = await accounts.ensureAdmin({
      email: config.adminEmail,
      adminKey: config.adminKey,
    })
    for (const warning of admin.warnings) logger.warn(warning)
    const fleet = await loadFleet(config.fleet, { localDriver: config.driver })
    const catalog = new CatalogService(fleet, new KyselyAllocationRepo(store.db))
    const podStore = podStoreOf(store)
    const { box, key: encryptionKey } = await secretBoxFor(config, store, logger)
    const modelDefinitions = loadModels(config)
    const objectStore = objectStoreFor(config)
    const modelsAccount = await ensurePublicModelsAccount(accounts)
    // The workloads of every host without `driver: docker` run here, simulated ones too
    // (docs/fleet.md).
    const driver = new ProcessDriver({
      stateDir: path.join(config.dataDir, 'runtime', 'process'),
      images: {
        ...builtinImageCommands(process.execPath),
        ...modelImageCommands(process.execPath),
        ...config.images,
      },
      sandbox: config.sandbox,
      ...(config.bwrapPath ? { bwrapPath: config.bwrapPath } : {}),
      clock,
    })
    const hostDrivers = await runtimeDriversOf(config, fleet, driver)
    // Decided now (a bwrap probe), so that the banner says whether workloads are sandboxed.
    const isolation = await driver.isolation()
    if (isolation.level === 'none') {
      logger.warn(
        { reason: isolation.detail, sandbox: config.sandbox },
        config.sandbox === 'none'
          ? "workloads run unsandboxed as the server's user (sandbox: none)"
          : "workloads run unsandboxed: only the admin account's are started (docs/security.md)",
      )
    }
    const isolationPolicy: IsolationPolicy = {
      // The operator's own account, and the platform's public models, whose code is podyard's
      // build or what the operator configured (docs/security.md).
      trusted: async (accountId) =>
        accountId === modelsAccount.id || (await accounts.findAccount(accountId))?.role === 'admin',
      unisolatedForEveryone: config.sandbox === 'none',
    }
    const templateRepo = new KyselyTemplateRepo(store.db)
    // The job API is served by this listener; its URL is known once it listens.
    let serverUrl = `http://${config.host}:${config.port}`
    // Endpoints name templates, registries and volumes, which ask endpoints who uses them: the
    // references are looked up through closures, so the order of construction does not matter.
    const endpointRepo = new KyselyEndpointRepo(store.db)
    const releaseRepo = new KyselyReleaseRepo(store.db)
    const endpoints: EndpointService = new EndpointService({
      repo: endpointRepo,
      catalog,
      references: {
        template: (accountId, id) => templates.resolve(accountId, id),
        registryExists: (accountId, id) => registries.exists(accountId, id),
        networkVolume: (accountId, id) => volumes.find(accountId, id),
      },
      clock,
      jobApiBaseUrl: () => serverUrl,
      releases: releaseRepo,
      deleteJobsOf: (endpointId) => {
        // Its worker key must stop verifying at once, not when the verification cache expires.
        workerKeys.forget()
        return queue.deleteEndpointJobs(endpointId)
      },
    })
    const workerKeys = new WorkerKeyService({
      generations: endpointRepo,
      ownEndpoint: (accountId, id) => endpoints.get(accountId, id),
      secret: deriveWorkerKeySecret(encryptionKey),
    })
    const volumeStorage = new DirectoryVolumeStorage({ dataDir: config.dataDir })
    const volumes = new VolumeService({
      repo: new KyselyNetworkVolumeRepo(store.db),
      fleet,
      storage: volumeStorage,
      clock,
      usersOf: async (accountId, volumeId) => [
        ...(await podsUsing(podStore.pods, accountId, usesNetworkVolume(volumeId))),
        ...(await endpoints.usersOf(accountId, { networkVolume: volumeId })),
      ],
    })
    const registries = new RegistryService({
      repo: new KyselyRegistryRepo(store.db),
      box,
      clock,
      usersOf: async (accountId, registryId) => [
        ...(await podsUsing(podStore.pods, accountId, usesRegistry(registryId))),
        ...(await endpoints.usersOf(accountId, { registry: registryId })),
      ],
      detach: async (accountId, registryId) => {
        const using = (await templateRepo.listByAccount(accountId)).filter(
          (t) => t.registry === registryId,
        )
        for (const template of using) await templateRepo.update({ ...template, registry: null })
        return using.map((t) => `template ${t.id} (${t.name})`)
      },
    })
    const registryExists = (accountId: string, id: string) => registries.exists(accountId, id)
    const templates = new TemplateService({
      repo: templateRepo,
      clock,
      registryExists,
      usersOf: async (accountId, templateId) => [
        ...(await podsUsing(podStore.pods, accountId, usesTemplate(templateId))),
        ...(await endpoints.usersOf(accountId, { templateId })),
      ],
    })
    const lifecycle = new PodLifecycle({
      store: podStore,
      fleet,
      driverFor: hostDrivers.driverFor,
      drivers: hostDrivers.drivers,
      dataDir: config.dataDir,
      publicIp: config.publicIp,
      volumePath: (volumeId) => volumeStorage.path(volumeId),
      registryCredentials: (accountId, registryId) => registries.credentials(accountId, registryId),
      publicKeys: async (accountId) => (await accounts.userSettings(accountId)).pubKey,
      isolationRefusal: (accountId, hostDriver) =>
        isolationRefusal(hostDriver, accountId, isolationPolicy),
      clock,
      logger,
    })
    // Billing (docs/billing.md): the meter charges always; the guard refuses only when enforced.
    const usageRepo = new KyselyUsageRepo(store.db)
    const creditRepo = new KyselyCreditRepo(store.db)
    const billingGuard = new BillingGuard({
      credits: creditRepo,
      enforce: config.billing.enforce,
      spendPerHour: async (accountId) =>
        runningSpendPerHour(
          await podStore.pods.list({
            accountId,
            statuses: ['PROVISIONING', 'STARTING', 'RUNNING'],
          }),
          (await workerRepo.listAll()).filter((w) => w.accountId === accountId),
          fleet.prices,
        ),
      // The operator's own account and the platform's public models are never stopped.
      exempt: async (accountId) =>
        accountId === modelsAccount.id || (await accounts.findAccount(accountId))?.role === 'admin',
    })
    const pods = new PodService({
      store: podStore,
      catalog,
      place,
      runtime: lifecycle,
      references: {
        template: (accountId, id) => templates.resolve(accountId, id),
        registryExists,
        networkVolume: (accountId, id) => volumes.find(accountId, id),
      },
      clock,
      nudge: lifecycle.nudge,
      spendGuard: billingGuard,
    })

    // Several replicas on one PostgreSQL database (docs/production.md, "Several replicas"):
    // long polls wake across replicas, one replica runs the reconcile loops, and the job API
    // counters and worker presence are shared. On SQLite this one process is the cluster.
    const replicaId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`
    const clustered = store.dialect === 'postgres'
    // Replicas on one machine share the data directory: the process driver's workloads are run
    // by the leader; the others only read their state and logs.
    if (clustered) driver.setActive(false)
    const wakeUps = clustered
      ? new PgWakeUps({
          connectionString: config.storeUrl,
          replicaId,
          logger,
          onRemote: (key) => {
            if (key === WEBHOOKS_DUE_KEY) dispatcher.nudge()
            const ended = parseEndPollsKey(key)
            if (ended) void jobs.endPolls(ended.endpointId, ended.workerId)
          },
        })
      : undefined
    const deliveries = new KyselyWebhookDeliveries({ db: store.db, dialect: store.dialect })
    let listeners: readonly Listener[] = []
    const webhookEgress = egressGuardFor(config, {
      listeners: () => listeners,
      resolveHost: options.resolveHost ?? resolveWithSystem,
      clock,
    })
    const dispatcher = new WebhookDispatcher({
      deliveries,
      egress: webhookEgress,
      clock,
      logger,
      retryDelayMs: config.webhooks.retryDelayMs,
      timeoutMs: config.webhooks.timeoutMs,
    })
    const queue = new KyselyJobQueue({
      db: store.db,
      dialect: store.dialect,
      clock,
      // A job's s3Config holds the caller's storage secret: sealed like registry passwords.
      secrets: box,
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
    const autoscaler = new WorkerAutoscaler({
      endpoints: endpointRepo,
      workers: workerRepo,
      exclusiveCapacity: (work) => podStore.exclusive((unit) => work(unit.allocations)),
      allocations: podStore.allocations,
      fleet,
      place,
      // Workers stay on the process driver: their built-in images and the job API URL they are
      // given (this listener's loopback address) exist only outside containers (docs/runtime.md).
      driverFor: () => driver,
      drivers: [driver],
      queue,
      presence,
      workerKeyFor: (endpointId) => workerKeys.current(endpointId),
      jobApiBaseUrl: () => config.workers.jobApiUrl.replace(/\/+$/, '') || serverUrl,
      networkVolume: async (accountId, volumeId) => {
        const volume = await volumes.find(accountId, volumeId)
        return volume && { dataCenterId: volume.dataCenterId, path: volumeStorage.path(volumeId) }
      },
      registryCredentials: (accountId, registryId) => registries.credentials(accountId, registryId),
      dataDir: config.dataDir,
      clock,
      logger,
      settings: config.workers,
      // The public models' workers run podyard's own build, shown to them read-only.
      billing: {
        outOfCredits: async (accountId) => {
          const credit = await creditRepo.credit(accountId)
          return credit !== undefined && (await billingGuard.outOfCredits(credit))
        },
        refusal: async (accountId, usdPerHour) => {
          try {
            await billingGuard.assertWithinSpendLimit(
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
        wakeUps?.notify(endPollsKey(endpointId, workerId))
        return jobs.endPolls(endpointId, workerId)
      },
      // Workers run on the process driver (above).
      isolationRefusal: (accountId) => isolationRefusal(driver, accountId, isolationPolicy),
      platformMounts: (endpoint) =>
        endpoint.accountId === modelsAccount.id
          ? [
              {
                hostPath: MODEL_CODE_DIR,
                containerPath: MODEL_CODE_PATH,
                kind: 'platform',
                readOnly: true,
              },
            ]
          : [],
      // A worker's system log shares the pods' event table (worker ids are pod-shaped).
      events: podStore.events,
    })
    const jobs = new JobService({
      endpoints,
      queue,
      presence,
      roster: autoscaler,
      clock,
      leaseMs: config.workers.jobLeaseMs,
      billing: billingGuard,
      webhookEgress,
      onJobFinished: (job) => models.onJobCompleted(job),
    })
    const objectUrls = new ObjectUrlSigner(deriveObjectUrlSecret(encryptionKey))
    const models: ModelService = new ModelService({
      models: modelDefinitions,
      ownerAccountId: modelsAccount.id,
      endpoints,
      jobs,
      credits,
      repo: new KyselyModelJobRepo(store.db),
      objects: objectStore,
      signer: objectUrls,
      baseUrl: () => serverUrl,
      clock,
      // Each charged job is usage of the model for `/v2/billing/endpoints`.
      usage: usageRepo,
      warn: (message, fields) => logger.warn(fields, message),
    })
    if (!existsSync(path.join(MODEL_CODE_DIR, 'models', 'reference-worker.js'))) {
      logger.warn(
        { dir: MODEL_CODE_DIR },
        "the public models' worker program is not built (npm run build): their jobs will not run",
      )
    }
    await models.syncEndpoints()
    await releaseStartup()
    const workers = new WorkerService({
      endpoints,
      repo: workerRepo,
      observer: autoscaler,
      clock,
      events: podStore.events,
    })
    const webhooks = new WebhookService({ endpoints, queue, deliveries })
    const sweeper = new JobSweeper({ queue, clock, logger, leaseMs: config.workers.jobLeaseMs })
    const meter = new BillingMeter({
      usage: usageRepo,
      pods: podStore.pods,
      workers: workerRepo,
      endpoints: endpointRepo,
      volumes: new KyselyNetworkVolumeRepo(store.db),
      prices: fleet.prices,
      clock,
      logger,
      intervalMs: config.billing.meterIntervalMs,
      afterCharge: async (credit) => {
        if (!(await billingGuard.outOfCredits(credit))) return
        const stopped = await pods.stopAll(
          credit.accountId,
          'the account is out of credits (balance at or below zero)',
        )
        if (stopped.length > 0) {
          logger.warn(
            { accountId: credit.accountId, pods: stopped },
            'out of credits: pods stopped',
          )
        }
      },
    })

    const jobLimiter = jobLimiterOf({ clock, jobLimits: config.jobLimits })
    let objectSweep: NodeJS.Timeout | undefined
    const leadership = new LeaderElection({
      ...(clustered ? { leases: new KyselyLeaseRepo(store.db) } : {}),
      replicaId,
      ttlMs: config.cluster.leaseTtlMs,
      logger,
      onLead: () => {
        void autoscaler.unfollow()
        driver.setActive(true)
        lifecycle.start()
        sweeper.start()
        dispatcher.start()
        meter.start()
        objectSweep = setInterval(() => {
          models.purgeExpiredObjects().catch((error: unknown) => {
            logger.error({ err: error }, 'purging expired public model results failed')
          })
        }, OBJECT_SWEEP_INTERVAL_MS)
        objectSweep.unref()
        // Workers are told where the job API is: the loops start only once it listens.
        autoscaler.start()
      },
      onLose: async () => {
        clearInterval(objectSweep)
        await Promise.all([
          autoscaler.stop(),
          sweeper.stop(),
          meter.stop(),
          dispatcher.stop(),
          lifecycle.stop(),
        ])
        if (clustered) {
          driver.setActive(false)
          autoscaler.follow()
        }
      },
    })
    const shared = clustered
      ? [
          new SharedJobLimits({
            db: store.db,
            replicaId,
            limiter: jobLimiter,
            intervalMs: config.cluster.syncIntervalMs,
            logger,
          }),
          new SharedWorkerPresence({
            db: store.db,
            presence,
            now: () => clock.now().getTime(),
            intervalMs: config.cluster.syncIntervalMs,
            logger,
          }),
        ]
      : []
    const app = await buildApp({
      credits,
      logger,
      clock,
      version,
      accounts,
      catalog,
      pods,
      templates,
      volumes,
      registries,
      endpoints,
      jobs,
      workerKeys,
      workers,
      releases: new ReleaseService({
        endpoints,
        releases: releaseRepo,
        workers: workerRepo,
        userOf: async (accountId) => (await accounts.primaryUser(accountId))?.id ?? null,
      }),
      clusters: new ClusterService({ repo: new KyselyClusterRepo(store.db), pods, clock }),
      webhooks,
      jobLimits: config.jobLimits,
      runningWorkers: (endpointId) => {
        const workers = jobs.workerCounts(endpointId)
        return workers.idle + workers.running
      },
      jobLimiter,
      cluster: {
        replicaId,
        isLeader: () => leadership.isLeader(),
        ...(wakeUps ? { listening: () => wakeUps.listening } : {}),
      },
      rateLimits: config.rateLimit,
      billing: {
        reports: new BillingReportService({ usage: usageRepo, clock }),
        spend: billingGuard,
      },
      models: { service: models, signer: objectUrls },
      readiness: async () => {
        await store.ping()
        if (!(await isMigrated(store))) throw new Error('the database has pending migrations')
      },
    })
    const address = await app.listen({ host: config.host, port: config.port })
    listeners = app
      .addresses()
      .flatMap((bound) =>
        typeof bound === 'string' ? [] : [{ address: bound.address, port: bound.port }],
      )
    const url = address.replace('[::1]', 'localhost')
    serverUrl = url
    for (const lock of servingLocks) lock.describe({ url })
    await wakeUps?.start()
    for (const sync of shared) sync.start()
    await leadership.start()
    // A replica that does not lead still answers for the workers the leader runs.
    if (clustered && !leadership.isLeader()) autoscaler.follow()
    logger.info(
      {
        url,
        store: store.displayUrl,
        fleet: config.fleet,
        replica: replicaId,
        leader: leadership.isLeader(),
      },
      'podyard is serving',
    )

    const banner = [
      `podyard ${version} is serving at ${url}`,
      `  REST API      ${url}/v2   (docs ${url}/v2/docs)`,
      `  store         ${store.displayUrl}`,
      ...(clustered
        ? [
            `  replica       ${replicaId}: ${leadership.isLeader() ? 'runs the reconcile loops (leader)' : 'API only; another replica runs the reconcile loops'}`,
          ]
        : []),
      `  fleet         ${config.fleet}: ${fleetSummary(fleet)}` +
        (fleet.hosts.some((h) => h.simulated)
          ? '\n                (simulated hosts are not real hardware)'
          : ''),
      ...sandboxBanner(isolation, config.sandbox),
      ...(admin.generatedKey
        ? [
            '',
            `  Admin API key (shown once, store it now; set PODYARD_ADMIN_KEY to choose your own):`,
            `    ${admin.generatedKey}`,
          ]
        : []),
      '',
      'Stop with Ctrl-C (SIGINT) or SIGTERM.',
      '',
    ].join('\n')

    return {
      app,
      store,
      fleet,
      url,
      banner,
      ...(admin.generatedKey ? { generatedAdminKey: admin.generatedKey } : {}),
      lifecycle,
      autoscaler,
      meter,
      drivers: hostDrivers.drivers,
      close: async () => {
        await app.close()
        await leadership.stop()
        await autoscaler.unfollow()
        for (const sync of shared) await sync.stop()
        await wakeUps?.close()
        await autoscaler.stop()
        await sweeper.stop()
        await meter.stop()
        await dispatcher.stop()
        await lifecycle.stop()
        for (const d of hostDrivers.drivers) await d.close()
        await store.close()
        for (const lock of servingLocks) lock.release()
      },
    }
  } catch (error) {
    await releaseStartup?.()
    await store.close()
    for (const lock of servingLocks) lock.release()
    throw error
  }
}

/**
 * A serving platform on a SQLite store holds its data directory (and the database file, when
 * it lives elsewhere) for as long as it runs: a second server there refuses to start
 * (src/store/serving-lock.ts). Replicas on PostgreSQL share a data directory by design.
 */
function lockSqliteStore(config: Readonly<Config>): ServingLock[] {
  if (!config.storeUrl.startsWith('sqlite:')) return []
  const file = config.storeUrl.slice('sqlite:'.length)
  if (file === ':memory:') return []
  mkdirSync(config.dataDir, { recursive: true })
  const locks = [
    lockForServing(
      path.join(config.dataDir, SERVE_LOCK_FILE),
      `the data directory ${config.dataDir}`,
    ),
  ]
  const database = path.resolve(file)
  if (path.dirname(database) !== path.resolve(config.dataDir)) {
    try {
      locks.push(lockForServing(`${database}.${SERVE_LOCK_FILE}`, `the database ${database}`))
    } catch (error) {
      locks[0]!.release()
      throw error
    }
  }
  return locks
}

const SERVE_LOCK_FILE = 'serve.lock'

function storeCommands(accounts: AccountService, credits: CreditService): StoreCommands {
  const accountOrAdmin = async (idOrEmail?: string) => {
    const account = idOrEmail
      ? await accounts.findAccount(idOrEmail)
      : await accounts.findAdminAccount()
    if (!account) throw new AppError('NOT_FOUND', `account ${idOrEmail ?? '(admin)'} not found`)
    return account
  }
  return {
    createKey: async (input) => {
      const account = await accountOrAdmin(input.account)
      return accounts.createApiKey({ ...input, accountId: account.id })
    },
    listKeys: async (idOrEmail) =>
      accounts.listApiKeys(idOrEmail ? (await accountOrAdmin(idOrEmail)).id : undefined),
    revokeKey: (id) => accounts.revokeApiKey(id),
    createAccount: async (input) => {
      const { account, user } = await accounts.createAccount(input)
      return { ...account, email: user.email }
    },
    listAccounts: () => accounts.listAccounts(),
    addCredits: async ({ account, amount, note }) => {
      const { id } = await accountOrAdmin(account)
      const admin = await accounts.findAdminAccount()
      const { credit, entry } = await credits.addCredits({
        accountId: id,
        usd: amount,
        note,
        by: admin?.id ?? null,
      })
      return { ...credit, entry }
    },
    showCredits: async (account) => {
      const { id } = await accountOrAdmin(account)
      return { ...(await credits.credit(id)), entries: await credits.entries(id) }
    },
    setSpendLimit: async (account, usdPerHour) =>
      credits.setSpendLimit((await accountOrAdmin(account)).id, usdPerHour),
  }
}

/** Runs `use` with the store-backed commands over a migrated store (creating the admin first). */
export async function withStoreCommands<T>(
  config: Readonly<Config>,
  use: (commands: StoreCommands) => Promise<T>,
): Promise<T> {
  const { store } = await openMigratedStore(config)
  try {
    const accounts = accountServiceOf(store, systemClock)
    const admin = await accounts.ensureAdmin({
      email: config.adminEmail,
      adminKey: config.adminKey,
    })
    if (admin.generatedKey) {
      process.stderr.write(
        `Created the admin account; its generated key (shown once): ${admin.generatedKey}\n`,
      )
    }
    const credits = new CreditService(new KyselyCreditRepo(store.db), systemClock)
    return await use(storeCommands(accounts, credits))
  } finally {
    await store.close()
  }
}

/** podyard's build (`dist/`), which the public models' workers run (docs/public-endpoints.md). */
const MODEL_CODE_DIR = fileURLToPath(new URL('../dist', import.meta.url))
/** How often stored results whose URLs expired are deleted. */
const OBJECT_SWEEP_INTERVAL_MS = 10 * 60 * 1000

/**
 * Where public model results are kept (docs/public-endpoints.md, "Storage"): the data directory,
 * or an S3-compatible bucket. A missing S3 setting refuses to start (exit 2) rather than losing
 * images later; no message here ever carries the secret key.
 */
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

export function objectStoreFor(config: Readonly<Config>): ObjectStore {
  const { kind, endpoint, region, bucket, accessKeyId, secretAccessKey, prefix, forcePathStyle } =
    config.objects
  if (kind === 'local') return new LocalObjectStore(path.join(config.dataDir, 'objects'))
  if (!endpoint || !bucket || !accessKeyId || !secretAccessKey) {
    const missing = Object.entries({ endpoint, bucket, accessKeyId, secretAccessKey })
      .filter(([, value]) => !value)
      .map(([field]) => `objects.${field}`)
    throw new ConfigError(`objects.kind is s3, which needs ${missing.join(', ')}`)
  }
  try {
    return new S3ObjectStore({
      endpoint,
      region,
      bucket,
      credentials: { accessKeyId, secretAccessKey },
      prefix,
      forcePathStyle,
    })
  } catch (error) {
    throw new ConfigError(`objects: ${(error as Error).message}`)
  }
}

/** The model registry: the defaults, then `models.file`, then `models.definitions`. */
function loadModels(config: Readonly<Config>) {
  const sources: Array<{ origin: string; entries: unknown }> = []
  if (config.models.file) {
    let text: string
    try {
      text = readFileSync(config.models.file, 'utf8')
    } catch (error) {
      throw new ModelConfigError(
        `models.file: cannot read ${config.models.file}: ${(error as Error).message}`,
      )
    }
    sources.push({ origin: config.models.file, entries: parseYaml(text) as unknown })
  }
  sources.push({ origin: 'models.definitions', entries: config.models.definitions })
  return buildModelRegistry(sources)
}

/** Wake-up key (PgWakeUps) by which a replica tells the leader's webhook dispatcher to look. */
const WEBHOOKS_DUE_KEY = 'webhooks-due'
const endPollsKey = (endpointId: string, workerId: string) => `end-polls:${endpointId}:${workerId}`
function parseEndPollsKey(key: string): { endpointId: string; workerId: string } | undefined {
  const match = /^end-polls:([^:]+):([^:]+)$/.exec(key)
  return match ? { endpointId: match[1]!, workerId: match[2]! } : undefined
}

/** Errors that mean "this installation refuses to start as configured" (exit code 2). */
export function isStartupRefusal(error: unknown): error is Error {
  return (
    error instanceof FleetError ||
    error instanceof StoreInUseError ||
    error instanceof DockerEngineUnreachableError ||
    error instanceof DatabaseTooNewError ||
    error instanceof EncryptionKeyMismatchError ||
    error instanceof EncryptionKeyFormatError ||
    error instanceof ModelConfigError
  )
}
