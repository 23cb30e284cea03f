import { setTimeout as sleep } from 'node:timers/promises'
import {
  RETIRED_WORKER_PHASES,
  type ManagedWorker,
  type WorkerRepo,
} from '../domain/serverless/worker.js'
import type { LogLine, LogQuery, RuntimeDriver } from '../runtime/driver.js'
import { LAUNCH_WAIT_POLL_MS, untilLaunched } from './until-launched.js'
import type { WorkerFailures } from './worker-failures.js'

/** Where a managed worker's output is read from: its host's driver, or the lines kept of it. */
export interface WorkerLogSources {
  workers: Pick<WorkerRepo, 'get'>
  driverFor: (hostId: string) => RuntimeDriver
  failures: Pick<WorkerFailures, 'readKept'>
}

/** A failed or stopped worker's kept lines (its workload is gone), else what its driver has. */
export async function readWorkerLogs(
  sources: WorkerLogSources,
  worker: ManagedWorker,
  query: LogQuery,
): Promise<LogLine[]> {
  // Its workload is gone (or on a lost host, which may not answer): only the kept lines.
  if (RETIRED_WORKER_PHASES.includes(worker.phase)) {
    return (await sources.failures.readKept(worker, query)) ?? []
  }
  if (worker.hostId === null) return []
  return sources.driverFor(worker.hostId).readLogs(worker.id, query)
}

/** A worker's output as it is written, from its launch on. */
export async function* followWorkerLogs(
  sources: WorkerLogSources,
  worker: ManagedWorker,
  afterSeq: number,
  signal: AbortSignal,
): AsyncIterable<LogLine> {
  // Followed from its launch: a worker waiting for a host (THROTTLED) has no workload yet.
  const launched = await untilLaunched(
    worker,
    () => sources.workers.get(worker.id),
    (current) => current.phase === 'PENDING' || current.hostId === null,
    signal,
  )
  // A failed or stopped worker writes nothing more: its stream ends after the kept lines.
  if (!launched || launched.hostId === null || RETIRED_WORKER_PHASES.includes(launched.phase))
    return
  const driver = sources.driverFor(launched.hostId)
  // A worker is recorded STARTING on its host just before its driver starts its workload: a
  // follower who connects in between waits for the workload, else the driver ends the stream
  // at once (no such workload) and the worker's output is never followed.
  let current: ManagedWorker | undefined = launched
  while (current.phase === 'STARTING' && (await driver.inspect(current.id)) === undefined) {
    await sleep(LAUNCH_WAIT_POLL_MS, undefined, { signal }).catch(() => undefined)
    if (signal.aborted) return
    current = await sources.workers.get(worker.id)
    if (!current || current.hostId !== launched.hostId) return
  }
  yield* driver.followLogs(launched.id, afterSeq, signal)
}
