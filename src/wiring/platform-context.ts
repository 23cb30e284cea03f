import type { ImagePrepull } from '../control/image-prepull.js'
import type { Logger } from 'pino'
import type { Config } from '../config/schema.js'
import type { BillingMeter } from '../control/billing-meter.js'
import type { JobSweeper } from '../control/job-sweeper.js'
import type { PodLifecycle } from '../control/pod-lifecycle.js'
import type { WebhookDispatcher } from '../control/webhook-dispatcher.js'
import type { WorkerAutoscaler } from '../control/worker-autoscaler.js'
import type { IsolationPolicy } from '../control/workload-isolation.js'
import type { AccountService } from '../domain/accounts/account-service.js'
import type { QuotaService } from '../domain/quotas/quota-service.js'
import type { AccountPoolService } from '../domain/accounts/account-pools.js'
import type { Account } from '../domain/accounts/account.js'
import type { BillingGuard } from '../domain/billing/billing-guard.js'
import type { BillingReportService } from '../domain/billing/billing-reports.js'
import type { CreditService } from '../domain/billing/credit-service.js'
import type { CatalogService } from '../domain/catalog/catalog-service.js'
import type { Fleet } from '../domain/catalog/fleet.js'
import type { ManagedHostService } from '../domain/hosts/managed-hosts.js'
import type { GpuBoard } from '../domain/hosts/gpu-board.js'
import type { HostBoard } from '../domain/hosts/host-board.js'
import type { DrainHook, HostService } from '../domain/hosts/host-service.js'
import type { HostMonitor } from '../control/host-monitor.js'
import type { RemoteGpuSampling } from '../control/remote-gpu-sampling.js'
import type { ClusterService } from '../domain/clusters/cluster-service.js'
import type { EgressGuard } from '../domain/egress/egress-guard.js'
import type { Listener } from '../domain/egress/egress-policy.js'
import type { ModelService } from '../domain/models/model-service.js'
import type { ObjectUrlSigner } from '../domain/models/signed-urls.js'
import type { PodService } from '../domain/pods/pod-service.js'
import type { RegistryService } from '../domain/registries/registry-service.js'
import type { SecretBox } from '../domain/registries/secret-box.js'
import type { SecretService } from '../domain/secrets/secret-service.js'
import type { EndpointService } from '../domain/serverless/endpoint-service.js'
import type { JobService } from '../domain/serverless/job-service.js'
import type { ReleaseService } from '../domain/serverless/release-service.js'
import type { WebhookService } from '../domain/serverless/webhook-service.js'
import type { WorkerKeyService } from '../domain/serverless/worker-keys.js'
import type { WorkerPresence } from '../domain/serverless/worker-presence.js'
import type { WorkerService } from '../domain/serverless/worker-service.js'
import type { TemplateService } from '../domain/templates/template-service.js'
import type { VolumeService } from '../domain/volumes/volume-service.js'
import type { KyselyJobQueue } from '../queue/kysely-job-queue.js'
import type { PgWakeUps } from '../queue/pg-wake-ups.js'
import type { RuntimeDriver, WorkloadIsolation } from '../runtime/driver.js'
import type { GpuSampler } from '../runtime/gpu/gpu-sampler.js'
import type { HostRuntime } from '../runtime/host-runtime.js'
import type { ProcessDriver } from '../runtime/process/process-driver.js'
import type { DirectoryVolumeStorage } from '../runtime/volume-directories.js'
import type { Clock, TimerClock } from '../shared/clock.js'
import type { Tracing } from '../shared/tracing.js'
import type { CreditRepo } from '../domain/billing/ports.js'
import type { Store } from '../store/open-store.js'
import type { PlatformMetrics } from './platform-metrics.js'
import type { PodStore } from '../domain/pods/ports.js'
import type { KyselyUsageRepo } from '../store/usage-repo.js'
import type { KyselyWorkerRepo } from '../store/worker-repo.js'

/**
 * What every area's wiring (src/wiring/*) gets: the configuration, the clock, the logger, the
 * opened store, the server's URL and, for references that cross areas (endpoints name volumes,
 * volumes ask endpoints who uses them, the meter stops pods...), every area's parts. Areas are
 * wired in the order platform.ts lists; a reference to a later area is a closure over `parts`,
 * called only once the platform runs, when every area is there.
 */
export interface PlatformContext {
  readonly config: Readonly<Config>
  readonly clock: Clock
  /** What the control loops' timers wait on: the system clock, or a test's ManualClock. */
  readonly timers: TimerClock
  readonly logger: Logger
  readonly store: Store
  /** The platform's metrics (platform-metrics.ts), which every area reports to. */
  readonly metrics: PlatformMetrics
  /** Spans to export (tracing-wiring.ts); undefined when tracing is off. */
  readonly tracing?: Tracing
  /** The server's base URL: the configured address until it listens, then where it does. */
  serverUrl(): string
  /** The addresses and ports it listens on (none until it does): never a webhook's target. */
  listeners(): readonly Listener[]
  readonly parts: PlatformParts
}

export function platformContext(
  fields: Omit<PlatformContext, 'parts' | 'serverUrl' | 'listeners'>,
): {
  context: PlatformContext
  /** Says where the server listens, once it does. */
  listening(url: string, listeners: readonly Listener[]): void
} {
  let url = `http://${fields.config.host}:${fields.config.port}`
  let bound: readonly Listener[] = []
  return {
    context: {
      ...fields,
      serverUrl: () => url,
      listeners: () => bound,
      parts: {} as PlatformParts,
    },
    listening: (at, listeners) => {
      url = at
      bound = listeners
    },
  }
}

/** The areas, each set by its wiring in platform.ts's order. */
export interface PlatformParts {
  accounts: AccountParts
  fleet: FleetParts
  billing: BillingParts
  pods: PodParts
  replicas: ReplicaParts
  serverless: ServerlessParts
  models: ModelParts
  hosts: HostParts
}

/** Accounts, the admin, and the key that seals secrets (account-wiring.ts). */
export interface AccountParts {
  accounts: AccountService
  /** The admin's quotas per account (docs/billing.md, "Quotas"). */
  quotas: QuotaService
  /** The pools each account is bound to (docs/fleet.md, "Pools"). */
  pools: AccountPoolService
  /** The admin's key when it was generated on this start (shown once, in the banner). */
  generatedAdminKey: string | undefined
  /** The platform's own account, owner of the public models' endpoints. */
  modelsAccount: Account
  /** Seals registry passwords and jobs' s3Config. */
  box: SecretBox
  /** The encryption key: worker keys and signed URLs are derived from it. */
  encryptionKey: Buffer
}

/** The hosts and how their workloads run (fleet-wiring.ts). */
export interface FleetParts {
  /** The running fleet: its `hosts` are replaced as hosts are added or removed at runtime. */
  fleet: Fleet
  /** Hosts added, changed and removed at runtime (docs/fleet.md, "Adding a machine"). */
  managed: ManagedHostService
  /** Told after the fleet's hosts changed. */
  fleetChanged: Array<() => void>
  /** Told of each driver added after start (a remote host added at runtime). */
  driverAdded: Array<(driver: RuntimeDriver) => void>
  /** The hosts' states (UP, DOWN, schedule) as this replica knows them. */
  board: HostBoard
  /** The sampled GPUs' readings and health, withdrawn GPUs (docs/gpus.md). */
  gpus: GpuBoard
  catalog: CatalogService
  /** The process driver: every host without `driver: docker` runs its workloads here. */
  processDriver: ProcessDriver
  /** How a host is reached and probed (fleet-wiring.ts). */
  runtimeOf(hostId: string): HostRuntime
  driverFor(hostId: string): RuntimeDriver
  drivers: RuntimeDriver[]
  /** How the process driver isolates workloads (a bubblewrap probe at start). */
  isolation: WorkloadIsolation
  isolationPolicy: IsolationPolicy
}

/** The operator's hosts: probes, cordon and drain (host-wiring.ts). */
export interface HostParts {
  service: HostService
  /** The leader's probes of every host. */
  monitor: HostMonitor
  /** Told when a host starts draining (the serverless workers' part moves workers off). */
  drainHooks: DrainHook[]
  /** The local host's GPU sampler, when this machine has NVIDIA GPUs (docs/gpus.md). */
  gpuSampler: GpuSampler | undefined
  /** The remote Docker hosts' GPU samplers, on the leader (docs/gpus.md). */
  remoteGpus: RemoteGpuSampling
}

/** Credits, usage, the spend guard and the meter (billing-wiring.ts). */
export interface BillingParts {
  credits: CreditService
  creditRepo: CreditRepo
  usage: KyselyUsageRepo
  guard: BillingGuard
  reports: BillingReportService
  meter: BillingMeter
}

/** Pods and what they are made of (pod-wiring.ts). */
export interface PodParts {
  podStore: PodStore
  templates: TemplateService
  volumes: VolumeService
  volumeStorage: DirectoryVolumeStorage
  registries: RegistryService
  secrets: SecretService
  lifecycle: PodLifecycle
  pods: PodService
  clusters: ClusterService
}

/** This replica among others on PostgreSQL (replica-wiring.ts). */
export interface ReplicaParts {
  replicaId: string
  /** Several replicas may serve this store (PostgreSQL). */
  clustered: boolean
  /** Wake-ups that reach the other replicas (PostgreSQL), else undefined (in-process). */
  wakeUps: PgWakeUps | undefined
}

/** Endpoints, jobs and workers (serverless-wiring.ts). */
export interface ServerlessParts {
  endpoints: EndpointService
  releases: ReleaseService
  workerKeys: WorkerKeyService
  queue: KyselyJobQueue
  presence: WorkerPresence
  workerRepo: KyselyWorkerRepo
  autoscaler: WorkerAutoscaler
  /** Images pulled ahead of time on the hosts (docs/fleet.md, "Images ahead of time"). */
  imagePulls: ImagePrepull
  jobs: JobService
  workers: WorkerService
  webhooks: WebhookService
  webhookEgress: EgressGuard
  dispatcher: WebhookDispatcher
  sweeper: JobSweeper
}

/** Public model endpoints (model-wiring.ts). */
export interface ModelParts {
  service: ModelService
  signer: ObjectUrlSigner
}
