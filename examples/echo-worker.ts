/**
 * A podyard worker in TypeScript (docs/worker-sdk.md). Configure it as runpod-python's worker
 * is configured (RUNPOD_WEBHOOK_GET_JOB, RUNPOD_WEBHOOK_POST_OUTPUT, RUNPOD_WEBHOOK_POST_STREAM,
 * RUNPOD_WEBHOOK_PING, RUNPOD_AI_API_KEY, RUNPOD_POD_ID), or set PODYARD_ENDPOINT_URL
 * (http://127.0.0.1:8080/v2/<endpoint_id>) and RUNPOD_AI_API_KEY, then:
 *
 *   npm run build && npx tsx examples/echo-worker.ts
 *
 * Input `{"text": "..."}` echoes the text back at once; `{"text": "...", "sleepMs": 2000}` first
 * posts a progress update (read it with /status) and works for that long;
 * `{"text": "...", "stream": true}` streams it word by word (read it with /stream);
 * `{"fail": true}` fails the job.
 */
import { serve } from 'podyard/worker'

interface EchoInput {
  text?: string
  stream?: boolean
  fail?: boolean
  sleepMs?: number
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason as Error)
    })
  })

async function* words(text: string, signal: AbortSignal) {
  for (const word of text.split(/\s+/)) {
    await sleep(100, signal)
    yield word
  }
}

const worker = serve<EchoInput>(
  async (job, context) => {
    const { text = '', stream = false, fail = false, sleepMs = 0 } = job.input
    if (fail) throw new Error('asked to fail')
    if (stream) return words(text, context.signal)
    if (sleepMs > 0) {
      // A long job: tell the caller where it is, then work.
      await context.progress({ received: text.length })
      await sleep(sleepMs, context.signal)
    }
    return { echo: text }
  },
  {
    ...(process.env.PODYARD_ENDPOINT_URL ? { endpointUrl: process.env.PODYARD_ENDPOINT_URL } : {}),
    concurrency: 4,
    returnAggregateOutput: true,
  },
)
process.stderr.write(`worker ${worker.workerId} is taking jobs\n`)

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write('stopping: finishing the jobs in flight\n')
    void worker.stop().then(() => process.exit(0))
  })
}
