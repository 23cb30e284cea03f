import type { JobLimiter } from '../api/jobs/job-limiter.js'
import { ReconcileLoop } from '../shared/reconcile-loop.js'
import { LeaderElection } from '../control/leader-election.js'
import { KyselyLeaseRepo } from '../store/lease-repo.js'
import { SharedJobLimits } from '../store/shared-job-limits.js'
import { SharedWorkerPresence } from '../store/shared-worker-presence.js'
import type { PlatformContext } from './platform-context.js'

/** How often stored public model results whose URLs expired are deleted. */
const OBJECT_SWEEP_INTERVAL_MS = 10 * 60 * 1000

/** The reconcile loops, run by one replica at a time, and what replicas share meanwhile. */
export interface Leadership {
  isLeader(): boolean
  /** Syncs shared counters and presence, and runs the loops once this replica leads. */
  start(): Promise<void>
  /** Stops the loops and syncs (the server is closing). */
  stop(): Promise<void>
}

/**
 * Which replica runs the reconcile loops (docs/production.md, "The leader"): the host probes,
 * the pod lifecycle,
 * the job sweeper, the webhook dispatcher, the billing meter, the purge of expired model results
 * and the worker autoscaler. On SQLite this process always leads. A replica that does not lead
 * follows the leader's workers (for /health and the workers list) and shares the job API
 * counters and the worker presence it sees.
 */
export function wireLeadership(context: PlatformContext, jobLimiter: JobLimiter): Leadership {
  const { config, store, clock, logger, parts } = context
  const { replicaId, clustered, wakeUps } = parts.replicas
  const { autoscaler, sweeper, dispatcher, imagePulls } = parts.serverless
  const { lifecycle } = parts.pods
  const { meter } = parts.billing
  const driver = parts.fleet.processDriver
  const { monitor, remoteGpus } = parts.hosts
  const { board, gpus } = parts.fleet
  const objectSweep = new ReconcileLoop({
    clock: context.timers,
    pass: async () => {
      await parts.models.service.purgeExpiredObjects()
    },
    intervalMs: OBJECT_SWEEP_INTERVAL_MS,
    onError: (error) => logger.error({ err: error }, 'purging expired public model results failed'),
  })
  // Every replica places pods: each reads the hosts added or removed at runtime (one row tells
  // whether they changed), the hosts' states the leader's probes write, and the GPU
  // withdrawals any replica's sampler writes (or an operator's reset). On SQLite this process
  // is the only writer, and its boards have every write already.
  const boardRefresh = new ReconcileLoop({
    clock: context.timers,
    pass: async () => {
      await parts.fleet.managed.sync()
      await board.refresh()
      await gpus.refresh()
    },
    intervalMs: config.cluster.syncIntervalMs,
    onError: (error) => logger.warn({ err: error }, 'reading the hosts and their states failed'),
  })
  const election = new LeaderElection({
    timers: context.timers,
    ...(clustered ? { leases: new KyselyLeaseRepo(store.db) } : {}),
    replicaId,
    ttlMs: config.cluster.leaseTtlMs,
    logger,
    onLead: async () => {
      void autoscaler.unfollow()
      driver.setActive(true)
      monitor.start()
      remoteGpus.start()
      imagePulls.start()
      lifecycle.start()
      dispatcher.start()
      meter.start()
      objectSweep.start()
      // The running jobs' leases renewed before the autoscaler can release a lost worker's
      // (job-sweeper.ts). Workers are told where the job API is: the loops start only once it
      // listens.
      await sweeper.start()
      autoscaler.start()
    },
    onLose: async () => {
      await Promise.all([
        objectSweep.stop(),
        monitor.stop(),
        remoteGpus.stop(),
        imagePulls.stop(),
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
          timers: context.timers,
          db: store.db,
          replicaId,
          limiter: jobLimiter,
          intervalMs: config.cluster.syncIntervalMs,
          logger,
        }),
        new SharedWorkerPresence({
          timers: context.timers,
          db: store.db,
          presence: parts.serverless.presence,
          now: () => clock.now().getTime(),
          intervalMs: config.cluster.syncIntervalMs,
          logger,
        }),
      ]
    : []
  return {
    isLeader: () => election.isLeader(),
    start: async () => {
      await wakeUps?.start()
      for (const sync of shared) sync.start()
      if (clustered) boardRefresh.start()
      await election.start()
      // A replica that does not lead still answers for the workers the leader runs.
      if (clustered && !election.isLeader()) autoscaler.follow()
    },
    stop: async () => {
      await boardRefresh.stop()
      await election.stop()
      await autoscaler.unfollow()
      for (const sync of shared) await sync.stop()
      await wakeUps?.close()
      await autoscaler.stop()
      await sweeper.stop()
      await meter.stop()
      await dispatcher.stop()
      await monitor.stop()
      await remoteGpus.stop()
      await imagePulls.stop()
      await lifecycle.stop()
    },
  }
}
