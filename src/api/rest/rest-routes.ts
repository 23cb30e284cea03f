import type { HostImagePulls } from '../../domain/hosts/host-images.js'
import type { FastifyInstance } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { BillingReportService } from '../../domain/billing/billing-reports.js'
import type { CreditService } from '../../domain/billing/credit-service.js'
import type { CatalogService } from '../../domain/catalog/catalog-service.js'
import type { PodService } from '../../domain/pods/pod-service.js'
import type { EndpointService } from '../../domain/serverless/endpoint-service.js'
import type { WebhookService } from '../../domain/serverless/webhook-service.js'
import type { WorkerKeyService } from '../../domain/serverless/worker-keys.js'
import type { WorkerService } from '../../domain/serverless/worker-service.js'
import type { RegistryService } from '../../domain/registries/registry-service.js'
import type { SecretService } from '../../domain/secrets/secret-service.js'
import type { TemplateService } from '../../domain/templates/template-service.js'
import type { VolumeService } from '../../domain/volumes/volume-service.js'
import type { ModelService } from '../../domain/models/model-service.js'
import { restGuard } from '../http/authentication.js'
import { modelCatalogRoutes } from '../models/model-routes.js'
import type { RateLimiter } from '../http/rate-limiter.js'
import { accountRoutes } from './account-routes.js'
import { refuseAdminRouteToMember, requireAdminRoutesMarked } from './admin-access.js'
import { adminAccountRoutes } from './admin-account-routes.js'
import { quotaRoutes } from './quota-routes.js'
import { poolRoutes } from './pool-routes.js'
import type { AccountPoolService } from '../../domain/accounts/account-pools.js'
import type { QuotaService } from '../../domain/quotas/quota-service.js'
import { adminRoutes } from './admin-routes.js'
import { adminHostImageRoutes } from './admin-host-image-routes.js'
import { adminHostRoutes } from './admin-host-routes.js'
import { adminFleetRoutes } from './admin-fleet-routes.js'
import { adminHostCertificateRoutes } from './admin-host-certificate-routes.js'
import type { HostService } from '../../domain/hosts/host-service.js'
import type { HostCertificateService } from '../../domain/hosts/host-certificates.js'
import type { ManagedHostService } from '../../domain/hosts/managed-hosts.js'
import { billingRoutes } from './billing-routes.js'
import { catalogRoutes } from './catalog-routes.js'
import { endpointRoutes } from './endpoint-routes.js'
import { workerListRoutes } from './worker-list-routes.js'
import { notOfferedRoutes } from './not-offered-routes.js'
import { podRoutes } from './pod-routes.js'
import { registryRoutes } from './registry-routes.js'
import { secretRoutes } from './secret-routes.js'
import { releaseRoutes } from './release-routes.js'
import { clusterRoutes } from './cluster-routes.js'
import type { ClusterService } from '../../domain/clusters/cluster-service.js'
import type { ReleaseService } from '../../domain/serverless/release-service.js'
import { templateRoutes } from './template-routes.js'
import { volumeRoutes } from './volume-routes.js'
import { webhookRoutes } from './webhook-routes.js'

export interface RestDeps {
  accounts: AccountService
  credits: CreditService
  catalog: CatalogService
  pods: PodService
  templates: TemplateService
  volumes: VolumeService
  registries: RegistryService
  secrets?: SecretService
  endpoints: EndpointService
  webhooks: WebhookService
  workerKeys: WorkerKeyService
  workers: WorkerService
  releases: ReleaseService
  clusters: ClusterService
  rateLimiter: RateLimiter
  /** Public models (`GET /v2/catalog/models`), when the platform serves them. */
  models?: ModelService
  /** `/billing...` reports (docs/billing.md); absent, those routes are not served. */
  billingReports?: BillingReportService
  /** Current spend per account (`GET /v2/account`'s `currentSpendPerHour`). */
  spend?: {
    currentSpendPerHour(accountId: string): Promise<number>
    /** Config `billing.enforce`: whether a used-up balance stops anything. */
    readonly enforced: boolean
  }
  /** `/admin/hosts...` (docs/fleet.md, "Host state"); absent, those routes are not served. */
  hosts?: HostService
  /** Hosts added, changed and removed at runtime (docs/fleet.md); with `hosts` only. */
  managedHosts?: ManagedHostService
  /** The authority that signs the hosts' engine certificates (docs/fleet.md); with `hosts` only. */
  hostCertificates?: HostCertificateService
  /** Quotas per account (docs/billing.md, "Quotas"); absent, neither served nor shown. */
  quotas?: QuotaService
  /** The pools each account is bound to (admin routes). */
  pools?: AccountPoolService
  /** Images on the hosts (docs/fleet.md, "Images ahead of time"); with `hosts` only. */
  hostImages?: HostImagePulls
}

/** The management API under /v2: every route here is authenticated and rate-limited. */
export async function restRoutes(app: FastifyInstance, deps: RestDeps): Promise<void> {
  app.addHook('onRequest', restGuard(deps))
  app.addHook('onRequest', refuseAdminRouteToMember)
  app.addHook('onRoute', requireAdminRoutesMarked)
  await app.register(accountRoutes, {
    accounts: deps.accounts,
    credits: deps.credits,
    ...(deps.spend ? { spend: deps.spend } : {}),
    ...(deps.quotas ? { quotas: deps.quotas } : {}),
  })
  await app.register(adminRoutes, { credits: deps.credits })
  await app.register(adminAccountRoutes, { accounts: deps.accounts, credits: deps.credits })
  await app.register(catalogRoutes, { catalog: deps.catalog })
  await app.register(podRoutes, { pods: deps.pods })
  await app.register(templateRoutes, { templates: deps.templates })
  await app.register(volumeRoutes, { volumes: deps.volumes })
  await app.register(registryRoutes, { registries: deps.registries })
  if (deps.secrets) await app.register(secretRoutes, { secrets: deps.secrets })
  await app.register(webhookRoutes, { webhooks: deps.webhooks })
  await app.register(endpointRoutes, {
    endpoints: deps.endpoints,
    workerKeys: deps.workerKeys,
    ...(deps.hostImages ? { hostImages: deps.hostImages } : {}),
  })
  await app.register(workerListRoutes, { workers: deps.workers })
  await app.register(notOfferedRoutes, { endpoints: deps.endpoints })
  await app.register(releaseRoutes, { releases: deps.releases })
  await app.register(clusterRoutes, { clusters: deps.clusters, pods: deps.pods })
  if (deps.billingReports) {
    await app.register(billingRoutes, {
      reports: deps.billingReports,
      clusterOfPods: (accountId) => deps.clusters.clusterOfPods(accountId),
    })
  }
  if (deps.models) await app.register(modelCatalogRoutes, { models: deps.models })
  if (deps.hosts) await app.register(adminHostRoutes, { hosts: deps.hosts })
  if (deps.hostImages) await app.register(adminHostImageRoutes, { images: deps.hostImages })
  if (deps.hosts && deps.managedHosts)
    await app.register(adminFleetRoutes, { hosts: deps.hosts, managed: deps.managedHosts })
  if (deps.hosts && deps.hostCertificates)
    await app.register(adminHostCertificateRoutes, { certificates: deps.hostCertificates })
  if (deps.quotas) await app.register(quotaRoutes, { accounts: deps.accounts, quotas: deps.quotas })
  if (deps.pools) await app.register(poolRoutes, { accounts: deps.accounts, pools: deps.pools })
}
