import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { PgWakeUps } from '../queue/pg-wake-ups.js'
import type { PlatformContext, ReplicaParts } from './platform-context.js'

/**
 * Several replicas on one PostgreSQL database (docs/production.md, "Several replicas"): long
 * polls wake across replicas through PgWakeUps; which one runs the reconcile loops is decided in
 * leadership-wiring.ts. On SQLite this one process is the cluster.
 */
export function wireReplicas(context: PlatformContext): ReplicaParts {
  const { config, store, logger, parts } = context
  const replicaId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`
  const clustered = store.capabilities.sharedByReplicas
  // Replicas on one machine share the data directory: the process driver's workloads are run
  // by the leader; the others only read their state and logs.
  if (clustered) parts.fleet.processDriver.setActive(false)
  const wakeUps = clustered
    ? new PgWakeUps({
        connectionString: config.storeUrl,
        replicaId,
        logger,
        onRemote: (key) => {
          if (key === WEBHOOKS_DUE_KEY) parts.serverless.dispatcher.nudge()
          const podId = parsePodChangedKey(key)
          if (podId) parts.pods.lifecycle.nudge(podId)
          const ended = parseEndPollsKey(key)
          if (ended) void parts.serverless.jobs.endPolls(ended.endpointId, ended.workerId)
        },
      })
    : undefined
  return { replicaId, clustered, wakeUps }
}

/** Wake-up key by which a replica tells the leader's webhook dispatcher to look. */
export const WEBHOOKS_DUE_KEY = 'webhooks-due'

/** Wake-up key by which a replica tells the leader's pod lifecycle that a pod changed. */
export const podChangedKey = (podId: string) => `pod-changed:${podId}`

function parsePodChangedKey(key: string): string | undefined {
  return key.startsWith('pod-changed:') ? key.slice('pod-changed:'.length) : undefined
}

/** Wake-up key by which a replica ends a worker's long polls held by another. */
export const endPollsKey = (endpointId: string, workerId: string) =>
  `end-polls:${endpointId}:${workerId}`

function parseEndPollsKey(key: string): { endpointId: string; workerId: string } | undefined {
  const match = /^end-polls:([^:]+):([^:]+)$/.exec(key)
  return match ? { endpointId: match[1]!, workerId: match[2]! } : undefined
}
