// A worker of the chaos suite (test/chaos/exactly-once.test.ts): podyard/worker from dist/,
// either run by the platform (configured by the RUNPOD_* environment it is given) or started
// by the rig (CHAOS_ENDPOINT_URL, RUNPOD_AI_API_KEY, RUNPOD_POD_ID). Its handler writes a line
// when it starts a job, when it ends it and when it gives it up, to $CHAOS_DIR/runs-<pid>.jsonl,
// so that the suite can tell how often and when each job ran.
import { appendFileSync } from 'node:fs'
import path from 'node:path'
import { clearTimeout, setTimeout } from 'node:timers'
import { serve } from '../../dist/sdk/worker/index.js'

const file = path.join(process.env.CHAOS_DIR, `runs-${process.pid}.jsonl`)
const record = (kind, jobId) =>
  appendFileSync(file, `${JSON.stringify({ kind, jobId, at: Date.now(), pid: process.pid })}\n`)

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(resolve, ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(signal.reason)
      },
      { once: true },
    )
  })
}

const worker = serve(
  async (job, context) => {
    record('start', job.id)
    try {
      await sleep(job.input.ms ?? 0, context.signal)
    } catch (error) {
      record('abort', job.id)
      throw error
    }
    record('end', job.id)
    return { n: job.input.n }
  },
  {
    ...(process.env.CHAOS_ENDPOINT_URL ? { endpointUrl: process.env.CHAOS_ENDPOINT_URL } : {}),
    concurrency: Number(process.env.CHAOS_CONCURRENCY ?? '2'),
    logger: null,
  },
)
process.on('SIGTERM', () => {
  void worker.stop({ gracePeriodMs: 5000 }).then(() => process.exit(0))
})
