/**
 * The graphile-worker anchor of the PostgreSQL throughput (bench/README.md, "bench/jobs"), run
 * by anchors.ts as a child process of its own: its schema migrated into the fresh database the
 * settings name, a runner of `concurrency` with a no-op task, and the jobs of the submitters,
 * all in this process.
 *
 * - Unbatched: graphile-worker's defaults, no local queue (one `get_job` query per job and
 *   worker) and no completion batching; jobs added one by one with `addJob` (each one `add_job`
 *   call, through `makeWorkerUtils`' pool of 10); a runner pool of `pool`.
 * - Batched (`settings.batched`): the configuration of graphile-worker's performance page
 *   (worker.graphile.org/docs/performance, "Batching"; the same options are documented in
 *   0.17's node_modules/graphile-worker/dist/index.d.ts): `localQueue: { size: 500 }` (the pool
 *   fetches and locks up to 500 jobs in one query and hands them to its workers),
 *   `completeJobBatchDelay: 0` and `failJobBatchDelay: 0` (the completions, and failures, of
 *   one turn of the event loop are one query), `maxPoolSize` the concurrency + 1 (the page runs
 *   24 jobs at a time on a pool of 25), and the jobs added with `addJobs`, its API for adding
 *   many at once: the adds the submitters make in one turn of the event loop go as one call,
 *   as podyard's server writes the `/run`s of one turn in one insert, and each submitter still
 *   waits until its job is stored.
 */
import pg from 'pg'
import { Logger, makeWorkerUtils, run, type WorkerUtils } from 'graphile-worker'
import { anchorSettings, CompletionCount, measure, printResult } from './anchor-load.js'

const settings = anchorSettings()
// Its per-job `Completed task` lines at info would be the bench's cost, not the queue's.
const logger = new Logger(() => (level, message) => {
  if (String(level) === 'error' || String(level) === 'warning') console.error(message)
})

/** The adds made in one turn of the event loop, sent as one `addJobs` call. */
class AddBatcher {
  private pending: Array<{ resolve: () => void; reject: (error: unknown) => void }> = []

  constructor(private readonly utils: WorkerUtils) {}

  add(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) setImmediate(() => this.flush())
      this.pending.push({ resolve, reject })
    })
  }

  private flush(): void {
    const batch = this.pending
    this.pending = []
    this.utils.addJobs(batch.map(() => ({ identifier: 'noop', payload: {} }))).then(
      () => batch.forEach((add) => add.resolve()),
      (error: unknown) => batch.forEach((add) => add.reject(error)),
    )
  }
}

const utils = await makeWorkerUtils({ connectionString: settings.url, logger })
await utils.migrate()
const done = new CompletionCount()
const runner = await run({
  connectionString: settings.url,
  concurrency: settings.concurrency,
  maxPoolSize: settings.batched ? settings.concurrency + 1 : settings.pool,
  noHandleSignals: true,
  logger,
  crontab: '',
  taskList: { noop: async () => {} },
  ...(settings.batched
    ? {
        preset: {
          worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
        },
      }
    : {}),
})
runner.events.on('job:complete', ({ error }) => {
  if (error) throw new Error(`a no-op job failed: ${String(error)}`)
  done.completed()
})

const counter = new pg.Client({ connectionString: settings.url })
await counter.connect()
/** A job's completion deletes it after the event: wait until the last delete is committed. */
const settled = async () => {
  for (;;) {
    const { rows } = await counter.query<{ n: string }>(
      'select count(*) as n from graphile_worker._private_jobs',
    )
    if (rows[0]!.n === '0') return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const batcher = new AddBatcher(utils)
const add = settings.batched ? () => batcher.add() : () => utils.addJob('noop', {})
try {
  printResult(await measure(settings, add, done, settled))
} finally {
  await runner.stop()
  await utils.release()
  await counter.end()
}
