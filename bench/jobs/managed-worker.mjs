// A managed TypeScript-SDK worker for bench/jobs (bench/README.md): the platform starts it with
// the RUNPOD_* environment every worker gets, and it answers each job at once. Plain JavaScript
// over the built SDK (dist/), so that starting it costs what starting Node costs.
import { serve } from '../../dist/sdk/worker/index.js'

const worker = serve(async (job) => ({ echo: job.input.text ?? null }))

process.once('SIGTERM', () => {
  void worker.stop({ gracePeriodMs: 2_000 }).then(() => process.exit(0))
})
