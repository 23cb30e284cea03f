/**
 * One benchmark worker process: the TypeScript worker SDK with a no-op handler. Configured by
 * the environment the orchestrator (run-bench.ts) sets; prints `ready <workerId>` once started
 * and stops gracefully on SIGTERM, printing its CPU time.
 */
import { serve } from '../../src/sdk/worker/index.js'

const endpointUrl = process.env.BENCH_ENDPOINT_URL
const apiKey = process.env.BENCH_API_KEY
if (!endpointUrl || !apiKey) throw new Error('BENCH_ENDPOINT_URL and BENCH_API_KEY are required')

const worker = serve(async () => null, {
  endpointUrl,
  apiKey,
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? '1'),
})
process.stdout.write(`ready ${worker.workerId}\n`)

process.once('SIGTERM', () => {
  void worker.stop({ gracePeriodMs: 5_000 }).then(() => {
    const cpu = process.cpuUsage()
    process.stdout.write(`cpu ${(cpu.user + cpu.system) / 1e6}\n`)
    process.exit(0)
  })
})
