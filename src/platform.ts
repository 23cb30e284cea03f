/**
 * The composition root of the server: config -> store -> the areas in order -> api -> listen.
 * Each area's wiring is a module of src/wiring/; this file is their order. main.ts (the CLI
 * entry) loads it only for the commands that need it, so commands that only talk to a running
 * server start in a fifth of the time.
 */
import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { jobLimiterOf } from './api/app.js'
import type { BillingMeter } from './control/billing-meter.js'
import type { PodLifecycle } from './control/pod-lifecycle.js'
import { POD_LABEL_KIND } from './control/pod-workload.js'
import type { WorkerAutoscaler } from './control/worker-autoscaler.js'
import { WORKER_LABEL_ENDPOINT } from './control/worker-workload.js'
import type { Fleet } from './domain/catalog/fleet.js'
import type { HostResolver } from './domain/egress/egress-guard.js'
import type { RuntimeDriver } from './runtime/driver.js'
import { systemClock, type Clock, type TimerClock } from './shared/clock.js'
import { resolveWithSystem } from './shared/host-addresses.js'
import type { Config } from './config/schema.js'
import type { Store } from './store/open-store.js'
import { acquireStartupLock } from './store/startup-lock.js'
import { wireAccounts } from './wiring/account-wiring.js'
import { wireApi } from './wiring/api-wiring.js'
import { wireBilling } from './wiring/billing-wiring.js'
import { fleetBanner, wireFleet } from './wiring/fleet-wiring.js'
import { wireHosts } from './wiring/host-wiring.js'
import { serverLogger } from './wiring/log-output.js'
import { openMetricsListener } from './wiring/metrics-listener-wiring.js'
import { platformMetrics } from './wiring/platform-metrics.js'
import { wireLeadership } from './wiring/leadership-wiring.js'
import { wireModels } from './wiring/model-wiring.js'
import { platformContext } from './wiring/platform-context.js'
import { wirePods } from './wiring/pod-wiring.js'
import { wireReplicas } from './wiring/replica-wiring.js'
import { wireServerless } from './wiring/serverless-wiring.js'
import { wireTracing } from './wiring/tracing-wiring.js'
import { openServingStore } from './wiring/store-wiring.js'
import { listenError } from './wiring/listen-error.js'

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
  /** The banner's facts, for `serve --json`. */
  summary: {
    version: string
    url: string
    store: string
    fleet: string
    replica: string
    leader: boolean
    /** Where the listener of config `metrics.listen` serves /metrics without a key. */
    metrics?: string
    generatedAdminKey?: string
  }
  /** Set only on the first start of an empty store without PODYARD_ADMIN_KEY. */
  generatedAdminKey?: string
  /** The pods and serverless workers running now on this server's hosts. */
  workloads(): Promise<RunningWorkloads>
  /**
   * Stops the server (workloads outlive it by design: the next start adopts them,
   * docs/runtime.md).
   */
  close(): Promise<void>
  /** Stops the server and removes every workload it runs: `podyard dev` (docs/dev.md). */
  closeWithWorkloads(): Promise<void>
}

export interface RunningWorkloads {
  pods: string[]
  workers: Array<{ id: string; endpointId: string }>
}

export interface StartOptions {
  clock?: Clock
  /**
   * The clock the control loops' timers wait on (default: the system clock). A test that gives
   * the same ManualClock as `clock` and `timers` runs the loops' passes only as it moves it.
   */
  timers?: TimerClock
  logger?: Logger
  /** Where the default logger writes: stdout (serve), or stderr (podyard dev's stdout is its own). */
  logTo?: 'stdout' | 'stderr'

  /** Resolves host names for the egress policy; default the system's resolver. */
  resolveHost?: HostResolver
  /**
   * Runs the workloads of the hosts that run here under the process driver, instead of it.
   * For benchmarks (bench/fleet: a driver that only records workloads), never for serving.
   */
  localDriver?: RuntimeDriver
  /** The built web console to serve at `/`; default dist/console of this package. */
  consoleDir?: string
}

export async function startPlatform(
  config: Readonly<Config>,
  options: StartOptions = {},
): Promise<Platform> {
  const clock = options.clock ?? systemClock
  const logger = options.logger ?? serverLogger(config, options.logTo === 'stderr' ? 2 : 1)
  const metrics = platformMetrics(config)
  const tracing = await wireTracing(config, { version })
  const serving = await openServingStore(config, logger, metrics.onQuery).catch(
    async (error: unknown) => {
      await tracing?.shutdown()
      throw error
    },
  )
  const { store } = serving
  const { context, listening } = platformContext({
    config,
    clock,
    timers: options.timers ?? systemClock,
    logger,
    store,
    metrics,
    ...(tracing ? { tracing } : {}),
  })
  const { parts } = context
  // Replicas starting together on an empty database create the accounts one after the other.
  let releaseStartup: (() => Promise<void>) | undefined
  try {
    releaseStartup = await acquireStartupLock(store)
    if (serving.applied.length > 0) {
      logger.info({ migrations: serving.applied }, 'applied migrations')
    }
    parts.accounts = await wireAccounts(context)
    parts.fleet = await wireFleet(
      context,
      options.localDriver ? { localDriver: options.localDriver } : {},
    )
    parts.billing = wireBilling(context)
    parts.pods = wirePods(context)
    parts.hosts = wireHosts(context)
    parts.replicas = wireReplicas(context)
    parts.serverless = wireServerless(context, {
      resolveHost: options.resolveHost ?? resolveWithSystem,
    })
    parts.models = await wireModels(context)
    metrics.watch({
      store,
      presence: parts.serverless.presence,
      meter: parts.billing.meter,
      meterIntervalMs: config.billing.meterIntervalMs,
      clock,
    })
    await releaseStartup()
    const jobLimiter = jobLimiterOf({ clock, jobLimits: config.jobLimits })
    const leadership = wireLeadership(context, jobLimiter)
    const { app, servesConsole } = await wireApi(context, {
      version,
      jobLimiter,
      leadership,
      ...(options.consoleDir ? { consoleDir: options.consoleDir } : {}),
    })

    const address = await app
      .listen({ host: config.host, port: config.port })
      .catch((error: unknown) => {
        throw listenError(error, config.host, config.port)
      })
    const url = address.replace('[::1]', 'localhost')
    const metricsListener = await openMetricsListener(context).catch(async (error: unknown) => {
      await app.close()
      throw error
    })
    // Both are this server's own listeners, which webhooks never reach.
    listening(url, [
      ...listenersOf(app),
      ...(metricsListener ? listenersOf(metricsListener.app) : []),
    ])
    serving.describe({ url })
    await leadership.start()
    const { replicaId, clustered } = parts.replicas
    logger.info(
      {
        url,
        store: store.displayUrl,
        fleet: config.fleet,
        replica: replicaId,
        leader: leadership.isLeader(),
        ...(metricsListener ? { metrics: metricsListener.url } : {}),
      },
      'podyard is serving',
    )
    const stopServing = async () => {
      await Promise.all([app.close(), metricsListener?.app.close()])
      await leadership.stop()
    }
    const release = async () => {
      parts.hosts.gpuSampler?.stop()
      for (const driver of parts.fleet.drivers) await driver.close()
      await serving.close()
      // The spans of the last requests and jobs are sent before the server says it stopped.
      await tracing?.shutdown().catch(() => undefined)
    }
    const adminKey = parts.accounts.generatedAdminKey
    const banner = [
      `podyard ${version} is serving at ${url}`,
      `  REST API      ${url}/v2   (docs ${url}/v2/docs)`,
      // The web console is served at `/` when it was built (docs/console.md).
      servesConsole
        ? `  console       ${url}/   (sign in with an API key)`
        : `  console       not built: npm run build:console`,
      `  store         ${store.displayUrl}`,
      // /metrics counts every account's work: the admin's key, or a private listener.
      metricsListener
        ? `  metrics       ${metricsListener.url}   (no key: keep this address private)`
        : `  metrics       ${url}/metrics   (admin key; or metrics.listen, docs/production.md)`,
      ...(clustered
        ? [
            `  replica       ${replicaId}: ${leadership.isLeader() ? 'runs the reconcile loops (leader)' : 'API only; another replica runs the reconcile loops'}`,
          ]
        : []),
      ...fleetBanner(config, parts.fleet),
      ...(adminKey
        ? [
            '',
            `  Admin API key (shown once, store it now; set PODYARD_ADMIN_KEY to choose your own):`,
            `    ${adminKey}`,
          ]
        : []),
      '',
      'Stop with Ctrl-C (SIGINT) or SIGTERM.',
      '',
    ].join('\n')

    return {
      app,
      store,
      fleet: parts.fleet.fleet,
      url,
      banner,
      summary: {
        version,
        url,
        store: store.displayUrl,
        fleet: config.fleet,
        replica: replicaId,
        leader: leadership.isLeader(),
        ...(metricsListener ? { metrics: metricsListener.url } : {}),
        ...(adminKey ? { generatedAdminKey: adminKey } : {}),
      },
      ...(adminKey ? { generatedAdminKey: adminKey } : {}),
      lifecycle: parts.pods.lifecycle,
      autoscaler: parts.serverless.autoscaler,
      meter: parts.billing.meter,
      drivers: parts.fleet.drivers,
      workloads: () => runningWorkloads(parts.fleet.drivers),
      close: async () => {
        await stopServing()
        await release()
      },
      closeWithWorkloads: async () => {
        // The server and the loops that start workloads stop first, so that nothing starts one
        // after the listing below.
        await stopServing()
        // An engine that does not answer (a machine down, its certificates changed) keeps its
        // workloads; the others are cleared and the server is still let go of, its data dir
        // free for the next start. Then the failures are told.
        const failures: string[] = []
        for (const driver of parts.fleet.drivers) {
          try {
            for (const workload of await driver.list()) await driver.remove(workload.id)
          } catch (error) {
            failures.push((error as Error).message)
          }
        }
        await release()
        if (failures.length > 0) {
          throw new Error(`could not remove the workloads of an engine: ${failures.join('; ')}`)
        }
      },
    }
  } catch (error) {
    parts.hosts?.gpuSampler?.stop()
    await releaseStartup?.()
    await serving.close()
    await tracing?.shutdown().catch(() => undefined)
    throw error
  }
}

/** The addresses and ports `app` listens on. */
function listenersOf(app: FastifyInstance): Array<{ address: string; port: number }> {
  return app
    .addresses()
    .flatMap((bound) =>
      typeof bound === 'string' ? [] : [{ address: bound.address, port: bound.port }],
    )
}

async function runningWorkloads(drivers: RuntimeDriver[]): Promise<RunningWorkloads> {
  const running: RunningWorkloads = { pods: [], workers: [] }
  for (const driver of drivers) {
    for (const workload of await driver.list()) {
      if (workload.phase === 'exited') continue
      if (workload.labels[POD_LABEL_KIND] === 'worker') {
        running.workers.push({
          id: workload.id,
          endpointId: workload.labels[WORKER_LABEL_ENDPOINT] ?? '?',
        })
      } else running.pods.push(workload.id)
    }
  }
  return running
}
