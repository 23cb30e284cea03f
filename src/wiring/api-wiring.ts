import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../api/app.js'
import type { JobLimiter } from '../api/jobs/job-limiter.js'
import { HostCertificateService } from '../domain/hosts/host-certificates.js'
import { isMigrated } from '../store/migrate.js'
import { KyselySettingsRepo } from '../store/settings-repo.js'
import type { Leadership } from './leadership-wiring.js'
import type { PlatformContext } from './platform-context.js'

/**
 * Where `npm run build:console` puts the console: dist/console of the package, the same from
 * src/wiring (tsx) and dist/wiring (the built server).
 */
const CONSOLE_DIR = fileURLToPath(new URL('../../dist/console', import.meta.url))

/**
 * The whole HTTP surface over every area's services (src/api/app.ts), not yet listening, and
 * whether it serves the web console (the banner says where, or how to build it).
 */
export async function wireApi(
  context: PlatformContext,
  options: { version: string; jobLimiter: JobLimiter; leadership: Leadership; consoleDir?: string },
): Promise<{ app: FastifyInstance; servesConsole: boolean }> {
  const { config, store, clock, logger, parts } = context
  const { accounts, fleet, billing, pods, serverless, models, replicas } = parts
  const consoleDir = options.consoleDir ?? CONSOLE_DIR
  const app = await buildApp({
    credits: billing.credits,
    logger,
    clock,
    version: options.version,
    accounts: accounts.accounts,
    catalog: fleet.catalog,
    pods: pods.pods,
    templates: pods.templates,
    volumes: pods.volumes,
    registries: pods.registries,
    secrets: pods.secrets,
    endpoints: serverless.endpoints,
    jobs: serverless.jobs,
    workerKeys: serverless.workerKeys,
    workers: serverless.workers,
    releases: serverless.releases,
    clusters: pods.clusters,
    webhooks: serverless.webhooks,
    jobLimits: config.jobLimits,
    runningWorkers: (endpointId) => {
      const workers = serverless.jobs.workerCounts(endpointId)
      return workers.idle + workers.running
    },
    jobLimiter: options.jobLimiter,
    cluster: {
      replicaId: replicas.replicaId,
      isLeader: () => options.leadership.isLeader(),
      ...(replicas.wakeUps ? { listening: () => replicas.wakeUps!.listening } : {}),
    },
    rateLimits: config.rateLimit,
    metrics: context.metrics.registry,
    telemetry: config.telemetry,
    ...(context.tracing ? { tracing: context.tracing } : {}),
    billing: { reports: billing.reports, spend: billing.guard },
    hosts: parts.hosts.service,
    managedHosts: fleet.managed,
    hostCertificates: new HostCertificateService({
      settings: new KyselySettingsRepo(store.db),
      box: accounts.box,
      now: () => clock.now(),
    }),
    quotas: accounts.quotas,
    pools: accounts.pools,
    hostImages: serverless.imagePulls,
    models: { service: models.service, signer: models.signer },
    consoleDir,
    // What /readyz says to anyone: never the driver's error, which can name the database's
    // host and user (the log has it).
    readiness: async () => {
      await store.ping().catch((error: unknown) => {
        throw new Error('the database does not answer', { cause: error })
      })
      if (!(await isMigrated(store))) throw new Error('the database has pending migrations')
    },
  })
  return { app, servesConsole: existsSync(path.join(consoleDir, 'index.html')) }
}
