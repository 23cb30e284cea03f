/**
 * The BullMQ + Redis anchor of the SQLite throughput (bench/README.md, "bench/jobs"), run by
 * anchors.ts as a child process of its own against the redis-server it started: a Queue whose
 * jobs are added one by one (`queue.add`) from the submitters and a Worker of `concurrency` with
 * a no-op processor, both in this process, each with BullMQ's default options.
 */
import { Queue, Worker } from 'bullmq'
import { anchorSettings, CompletionCount, measure, printResult } from './anchor-load.js'

const settings = anchorSettings()
const redis = new URL(settings.url)
const connection = { host: redis.hostname, port: Number(redis.port) }
const name = 'bench-noop'

const queue = new Queue(name, { connection })
const done = new CompletionCount()
const worker = new Worker(name, async () => null, {
  connection,
  concurrency: settings.concurrency,
})
worker.on('completed', () => done.completed())
worker.on('failed', (_job, error) => {
  throw new Error(`a no-op job failed: ${error.message}`)
})
await queue.waitUntilReady()
await worker.waitUntilReady()

try {
  printResult(await measure(settings, () => queue.add('noop', {}), done))
} finally {
  await worker.close()
  await queue.close()
}
