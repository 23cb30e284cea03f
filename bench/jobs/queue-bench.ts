/**
 * bench/jobs/queue-bench.ts: the job queue alone on SQLite, without HTTP (bench/README.md): the
 * CPU time of each phase of a job's life in the store, for A/B comparisons of the queue's SQL.
 *
 *   npx tsx bench/jobs/queue-bench.ts [--jobs=20000] [--batch=64] [--ids=random|ordered|counter]
 *
 * Submits --jobs jobs in write batches as /run under load does, takes them --batch at a time,
 * completes each, and prints the CPU microseconds per job of each phase.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { newJob, type Job } from '../../src/domain/serverless/job.js'
import { KyselyJobQueue } from '../../src/queue/kysely-job-queue.js'
import { migrateToLatest } from '../../src/store/migrate.js'
import { openStore } from '../../src/store/open-store.js'

function option(name: string, fallback: string): string {
  const found = process.argv.find((arg) => arg.startsWith(`--${name}=`))
  return found ? found.slice(name.length + 3) : fallback
}
const jobs = Number(option('jobs', '20000'))
const batch = Number(option('batch', '64'))
/** How job ids are made: `random` (v4 UUIDs), `ordered` (time-ordered), `counter` (job-0, job-1, ...). */
const ids = option('ids', 'random')
const jobId = (i: number) =>
  ids === 'counter' ? `job-${i}` : ids === 'ordered' ? orderedId(i) : randomUUID()
function orderedId(i: number): string {
  const hex = (Date.now() * 1000 + i).toString(16).padStart(16, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-${randomUUID().slice(19)}`
}

const dir = mkdtempSync(path.join(tmpdir(), 'podyard-queue-bench-'))
const store = await openStore(`sqlite:${path.join(dir, 'bench.db')}`)
await migrateToLatest(store)
const queue = new KyselyJobQueue({ db: store.db, dialect: 'sqlite' })
const endpointId = 'benchendpoint1'
const cpu = () => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}
const perJob = (micros: number) => `${(micros / jobs).toFixed(1)} µs`

const created: Job[] = []
for (let i = 0; i < jobs; i++) {
  created.push(
    newJob({
      id: jobId(i),
      endpointId,
      accountId: 'acct_bench',
      input: {},
      policy: { executionTimeout: 600_000, ttl: 86_400_000, lowPriority: false },
      sync: false,
      createdAt: new Date(),
    }),
  )
}
let t = cpu()
// 32 at a time, as 32 concurrent submitters would arrive.
for (let i = 0; i < jobs; i += 32)
  await Promise.all(created.slice(i, i + 32).map((j) => queue.submit(j)))
const submitted = cpu() - t
t = cpu()
const taken: Job[] = []
while (taken.length < jobs) {
  taken.push(...(await queue.take(endpointId, 'worker-1', { max: batch, leaseMs: 60_000 })))
}
const took = cpu() - t
t = cpu()
for (let i = 0; i < jobs; i += batch) {
  await Promise.all(
    taken
      .slice(i, i + batch)
      .map((j) => queue.complete(endpointId, j.id, 'worker-1', { output: null })),
  )
}
const completed = cpu() - t
console.log(
  `${jobs} jobs (${ids} ids), take batch ${batch}: submit ${perJob(submitted)}, take ${perJob(took)}, ` +
    `complete ${perJob(completed)}, total ${perJob(submitted + took + completed)} of CPU per job`,
)
await store.close()
rmSync(dir, { recursive: true, force: true })
