import type { Logger } from 'pino'
import type { ManagedWorker } from '../domain/serverless/worker.js'
import type { RuntimeDriver, WorkloadState } from '../runtime/driver.js'
import { POD_LABEL_KIND } from './pod-workload.js'

/** A driver whose list takes longer is treated as not answering for this pass. */
const LIST_TIMEOUT_MS = 15_000

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/** A worker workload as listed, with the driver that has it. */
export interface ListedWorkload {
  state: WorkloadState
  driver: RuntimeDriver
}

/**
 * Every driver's worker workloads, each with the driver that has it. A driver that does not
 * answer (its host is being lost), or whose hosts are all DOWN (`driverDown`: not even asked),
 * is `unlisted`: its workers' workloads are unknown, not gone.
 */
export async function listWorkerWorkloads(
  drivers: readonly RuntimeDriver[],
  logger: Pick<Logger, 'warn'>,
  driverDown?: (driver: RuntimeDriver) => boolean,
): Promise<{ workloads: Map<string, ListedWorkload>; unlisted: Set<RuntimeDriver> }> {
  const workloads = new Map<string, ListedWorkload>()
  const unlisted = new Set<RuntimeDriver>()
  await Promise.all(
    drivers.map(async (driver) => {
      if (driverDown?.(driver)) return void unlisted.add(driver)
      try {
        const workers = driver.list({ labels: { [POD_LABEL_KIND]: 'worker' } })
        for (const state of await withTimeout(workers, LIST_TIMEOUT_MS)) {
          workloads.set(state.id, { state, driver })
        }
      } catch (error) {
        unlisted.add(driver)
        logger.warn({ err: error, driver: driver.name }, 'listing workers failed')
      }
    }),
  )
  return { workloads, unlisted }
}

/**
 * Removes the workloads that no starting or ready worker owns: a worker's whose record is gone,
 * and those left on a host that was lost (their workers were replaced) once it answers again.
 * Each through the driver that listed it; a failure is tried again on the next pass.
 */
export async function removeStrayWorkloads(
  rows: readonly ManagedWorker[],
  workloads: ReadonlyMap<string, ListedWorkload>,
  logger: Pick<Logger, 'warn'>,
): Promise<void> {
  const owned = new Set(
    rows.filter((w) => w.phase === 'STARTING' || w.phase === 'READY').map((w) => w.id),
  )
  for (const { state, driver } of workloads.values()) {
    if (owned.has(state.id)) continue
    logger.warn({ workerId: state.id }, 'removing a workload of no running worker')
    try {
      await driver.remove(state.id)
    } catch (error) {
      logger.warn({ err: error, workerId: state.id }, 'removing it failed')
    }
  }
}
