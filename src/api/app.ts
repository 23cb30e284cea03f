import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { HostImagePulls } from '../domain/hosts/host-images.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import type { AccountService } from '../domain/accounts/account-service.js'
import type { CreditService } from '../domain/billing/credit-service.js'
import type { CatalogService } from '../domain/catalog/catalog-service.js'
import type { PodService } from '../domain/pods/pod-service.js'
import type { EndpointService } from '../domain/serverless/endpoint-service.js'
import type { JobService } from '../domain/serverless/job-service.js'
import type { WorkerService } from '../domain/serverless/worker-service.js'
import type { ReleaseService } from '../domain/serverless/release-service.js'
import type { ClusterService } from '../domain/clusters/cluster-service.js'
import type { LimitedOperation, OperationLimit } from '../domain/serverless/operation-limits.js'
import type { WebhookService } from '../domain/serverless/webhook-service.js'
import type { WorkerKeyService } from '../domain/serverless/worker-keys.js'
import type { RegistryService } from '../domain/registries/registry-service.js'
import type { SecretService } from '../domain/secrets/secret-service.js'
import type { TemplateService } from '../domain/templates/template-service.js'
import type { VolumeService } from '../domain/volumes/volume-service.js'
import type { ModelService } from '../domain/models/model-service.js'
import type { ObjectUrlSigner } from '../domain/models/signed-urls.js'
import { AppError } from '../shared/app-error.js'
import type { Clock } from '../shared/clock.js'
import { loadConsoleAssets } from './console/console-assets.js'
import { consoleRoutes, isConsolePage, sendAsset } from './console/console-routes.js'
import { graphqlRoutes } from './graphql/graphql-routes.js'
import { requestLogSerializer } from './http/log-redaction.js'
import { OneLinePerRequest } from './http/request-log.js'
import { installRequestIdHeader, requestIdOf } from './http/request-ids.js'
import { installServerClosing } from './http/server-closing.js'
import { installTraceContext } from './http/trace-context.js'
import type { Tracing } from '../shared/tracing.js'
import { installGpuMetrics } from './http/gpu-metrics.js'
import { installClusterMetrics, installHostMetrics, installMetrics } from './http/metrics.js'
import type { HostService } from '../domain/hosts/host-service.js'
import type { HostCertificateService } from '../domain/hosts/host-certificates.js'
import type { ManagedHostService } from '../domain/hosts/managed-hosts.js'
import { installJsonBodyParser } from './http/json-body-parser.js'
import { installProblemHandlers } from './http/problem.js'
import { clientErrorHandler, frameworkErrors, MAX_PARAM_LENGTH } from './http/router-errors.js'
import { RateLimiter, type RateLimitQuotas } from './http/rate-limiter.js'
import { isReservedPath } from './http/reserved-paths.js'
import { validatorCompiler } from './http/validation.js'
import { serializerCompiler } from './http/response-serializers.js'
import { JobLimiter } from './jobs/job-limiter.js'
import { jobRoutes } from './jobs/job-routes.js'
import { modelRoutes } from './models/model-routes.js'
import { docsPageOptions } from './openapi/docs-page.js'
import { openapiOptions } from './openapi/openapi-document.js'
import { opsRoutes } from './ops-routes.js'
import type { BillingReportService } from '../domain/billing/billing-reports.js'
import { restRoutes } from './rest/rest-routes.js'
import type { QuotaService } from '../domain/quotas/quota-service.js'
import type { AccountPoolService } from '../domain/accounts/account-pools.js'
import { workerRoutes } from './worker/worker-routes.js'

export interface AppDeps {
  logger: FastifyBaseLogger
  clock: Clock
  version: string
  accounts: AccountService
  credits: CreditService
  catalog: CatalogService
  pods: PodService
  templates: TemplateService
  volumes: VolumeService
  registries: RegistryService
  /** Account secrets (`/v2/account/secrets`, GraphQL secretCreate/secretDelete). */
  secrets?: SecretService
  endpoints: EndpointService
  jobs: JobService
  webhooks: WebhookService
  /** Job API limits per endpoint and operation (config `jobLimits`); the spec's when absent. */
  jobLimits?: {
    perWorkerRate: number
    perWorkerConcurrency: number
    operations?: Partial<Record<LimitedOperation, Partial<OperationLimit>>>
  }
  /** An endpoint's running workers, which raise its job API limits. */
  runningWorkers?: (endpointId: string) => number
  /**
   * The job API limiter, when the caller shares its counters with other replicas
   * (docs/production.md); otherwise one is made from `jobLimits`.
   */
  jobLimiter?: JobLimiter
  /** This replica in a cluster: its id and whether it runs the reconcile loops (`/metrics`). */
  cluster?: { replicaId: string; isLeader(): boolean; listening?: () => boolean }
  workerKeys: WorkerKeyService
  workers: WorkerService
  releases: ReleaseService
  clusters: ClusterService
  rateLimits: RateLimitQuotas
  readiness: () => Promise<void>
  /** The built web console (dist/console), served at `/` (docs/console.md); none when absent. */
  consoleDir?: string
  /** Public models and the signer of their result URLs (docs/public-endpoints.md). */
  models?: { service: ModelService; signer: ObjectUrlSigner }
  /** The fleet's hosts for the admin (docs/fleet.md, "Host state"), and `/metrics` of them. */
  hosts?: HostService
  /** Hosts added, changed and removed at runtime (docs/fleet.md); with `hosts` only. */
  managedHosts?: ManagedHostService
  /** The authority that signs the hosts' engine certificates (docs/fleet.md); with `hosts` only. */
  hostCertificates?: HostCertificateService
  /** Quotas per account (docs/billing.md, "Quotas"). */
  quotas?: QuotaService
  /** The pools each account is bound to (docs/fleet.md, "Pools"). */
  pools?: AccountPoolService
  /** Images on the hosts, pulled ahead of time (docs/fleet.md, "Images ahead of time"). */
  hostImages?: HostImagePulls
  /**
   * Config `telemetry` (docs/production.md, "Request ids and tracing"): W3C traceparent in and
   * out.
   */
  telemetry?: { traceContext: boolean }
  /**
   * Spans to export (docs/production.md, "Tracing"); when set, every request has a span and
   * the trace context of `telemetry.traceContext` whatever it says.
   */
  tracing?: Tracing
  /** The registry `/metrics` serves, holding the platform's metrics; a new one when absent. */
  metrics?: Registry
  /** Billing reports and current spend (docs/billing.md). */
  billing?: {
    reports: BillingReportService
    spend: {
      currentSpendPerHour(accountId: string): Promise<number>
      /** Config `billing.enforce`: whether a used-up balance stops anything. */
      readonly enforced: boolean
    }
  }
}

/** The job API limiter of `jobLimits` (the specification's limits when absent). */
export function jobLimiterOf(deps: Pick<AppDeps, 'clock' | 'jobLimits'>): JobLimiter {
  return new JobLimiter({
    clock: deps.clock,
    ...(deps.jobLimits
      ? {
          perWorker: {
            rate: deps.jobLimits.perWorkerRate,
            concurrency: deps.jobLimits.perWorkerConcurrency,
          },
          overrides: deps.jobLimits.operations ?? {},
        }
      : {}),
  })
}

/** The whole HTTP surface, ready to `listen` or to `inject` in tests. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger.child({}, { serializers: { req: requestLogSerializer } }),
    logController: new OneLinePerRequest(),
    bodyLimit: 20 * 1024 * 1024,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors,
    clientErrorHandler,
    // The caller's X-Request-Id when it is safe to log, else a UUID (docs/api.md, "Request ids").
    requestIdHeader: false,
    genReqId: requestIdOf,
  }).withTypeProvider<TypeBoxTypeProvider>()

  // Every route lies under a reserved prefix, so that an unknown path next to it is a 404
  // problem+json rather than the console's page; the console's own files and `/` are its own.
  const consoleAssets = deps.consoleDir ? loadConsoleAssets(deps.consoleDir) : undefined
  const consolePaths = new Set(['/', ...(consoleAssets?.keys() ?? [])])
  app.addHook('onRoute', (route) => {
    if (!consolePaths.has(route.url) && !isReservedPath(route.url)) {
      throw new Error(
        `route ${route.url} is under no reserved prefix: add its first segment to RESERVED_PREFIXES (src/api/http/reserved-paths.ts) and docs/api.md`,
      )
    }
  })
  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  installJsonBodyParser(app)
  installRequestIdHeader(app)
  if (deps.telemetry?.traceContext || deps.tracing) installTraceContext(app, deps.tracing)
  installServerClosing(app)
  // Long polls (job-take, job-stop, /runsync, /status-sync, /stream) answer at once on close
  // instead of holding the server up to their full wait.
  app.addHook('preClose', async () => deps.jobs.close())
  const consolePage = consoleAssets?.get('/index.html')
  installProblemHandlers(app, {
    page: (request, reply) =>
      consolePage && isConsolePage(request) ? sendAsset(request, reply, consolePage) : undefined,
  })
  const metrics = installMetrics(app, deps.metrics)
  if (deps.cluster) installClusterMetrics(metrics, deps.cluster)
  if (deps.hosts) {
    installHostMetrics(metrics, deps.hosts)
    installGpuMetrics(metrics, deps.hosts)
  }

  await app.register(swagger, openapiOptions(deps.version))
  await app.register(swaggerUi, docsPageOptions)
  app.get('/v2/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  if (consoleAssets) await app.register(consoleRoutes, { assets: consoleAssets })
  else if (deps.consoleDir) {
    app.get('/', { schema: { hide: true } }, async () => {
      throw new AppError(
        'ROUTE_NOT_FOUND',
        'the web console is not built: run npm run build:console (npm install does it)',
      )
    })
  }
  await app.register(opsRoutes, {
    readiness: deps.readiness,
    metrics,
    version: deps.version,
    accounts: deps.accounts,
  })
  // One account's REST and GraphQL requests count against the same windows.
  const rateLimiter = new RateLimiter(deps.rateLimits, deps.clock)
  await app.register(graphqlRoutes, {
    accounts: deps.accounts,
    credits: deps.credits,
    pods: deps.pods,
    catalog: deps.catalog,
    templates: deps.templates,
    volumes: deps.volumes,
    registries: deps.registries,
    ...(deps.secrets ? { secrets: deps.secrets } : {}),
    endpoints: deps.endpoints,
    workerKeys: deps.workerKeys,
    clock: deps.clock,
    rateLimiter,
    ...(deps.billing ? { spend: deps.billing.spend } : {}),
    ...(deps.models ? { models: deps.models.service } : {}),
    clusters: deps.clusters,
    ...(deps.quotas ? { quotas: deps.quotas } : {}),
  })
  await app.register(restRoutes, {
    prefix: '/v2',
    accounts: deps.accounts,
    credits: deps.credits,
    catalog: deps.catalog,
    pods: deps.pods,
    templates: deps.templates,
    volumes: deps.volumes,
    registries: deps.registries,
    ...(deps.secrets ? { secrets: deps.secrets } : {}),
    endpoints: deps.endpoints,
    workerKeys: deps.workerKeys,
    workers: deps.workers,
    releases: deps.releases,
    clusters: deps.clusters,
    webhooks: deps.webhooks,
    rateLimiter,
    ...(deps.models ? { models: deps.models.service } : {}),
    ...(deps.billing ? { billingReports: deps.billing.reports, spend: deps.billing.spend } : {}),
    ...(deps.hosts ? { hosts: deps.hosts } : {}),
    ...(deps.managedHosts ? { managedHosts: deps.managedHosts } : {}),
    ...(deps.hostCertificates ? { hostCertificates: deps.hostCertificates } : {}),
    ...(deps.quotas ? { quotas: deps.quotas } : {}),
    ...(deps.pools ? { pools: deps.pools } : {}),
    ...(deps.hostImages ? { hostImages: deps.hostImages } : {}),
  })
  // `/v2/<model_id>/...` and `/v2/objects/...`: static routes, preferred to `/v2/<endpoint_id>/...`.
  if (deps.models) {
    await app.register(modelRoutes, {
      prefix: '/v2',
      accounts: deps.accounts,
      models: deps.models.service,
      signer: deps.models.signer,
      clock: deps.clock,
    })
  }
  // `/v2/<endpoint_id>/...`: after the management API, whose static first segments win.
  await app.register(jobRoutes, {
    prefix: '/v2',
    accounts: deps.accounts,
    jobs: deps.jobs,
    clock: deps.clock,
    limiter: deps.jobLimiter ?? jobLimiterOf(deps),
    ...(deps.runningWorkers ? { runningWorkers: deps.runningWorkers } : {}),
  })
  await app.register(workerRoutes, {
    prefix: '/v2',
    accounts: deps.accounts,
    jobs: deps.jobs,
    workerKeys: deps.workerKeys,
  })
  return app
}
