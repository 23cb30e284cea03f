/**
 * The graphile-worker anchor of the PostgreSQL throughput (bench/README.md, "bench/jobs"), run
 * by anchors.ts as a child process of its own: its schema migrated into the fresh database the
 * settings name, a runner of `concurrency` with a no-op task, and jobs added one by one with
 * `addJob` (each one `add_job` call) from the submitters, all in this process. Unbatched:
 * graphile-worker's defaults, no local queue (one job per fetch) and no completion batching.
 */
import pg from 'pg'
import { Logger, makeWorkerUtils, run } from 'graphile-worker'
import { anchorSettings, CompletionCount, measure, printResult } from './anchor-load.js'

const settings = anchorSettings()
// Its per-job `Completed task` lines at info would be the bench's cost, not the queue's.
const logger = new Logger(() => (level, message) => {
  if (String(level) === 'error' || String(level) === 'warning') console.error(message)
})

const utils = await makeWorkerUtils({ connectionString: settings.url, logger })
await utils.migrate()
const done = new CompletionCount()
const runner = await run({
  connectionString: settings.url,
  concurrency: settings.concurrency,
  maxPoolSize: settings.pool,
  noHandleSignals: true,
  logger,
  crontab: '',
  taskList: { noop: async () => {} },
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

try {
  printResult(await measure(settings, () => utils.addJob('noop', {}), done, settled))
} finally {
  await runner.stop()
  await utils.release()
  await counter.end()
}
