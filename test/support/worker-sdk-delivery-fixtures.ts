import { Writable } from 'node:stream'
import { pino, type Logger } from 'pino'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import {
  serve,
  type JobContext,
  type ServeOptions,
  type WorkerHandle,
  type WorkerLogger,
} from '../../src/sdk/worker/index.js'
import { TEST_ADMIN_KEY } from './platform.js'
import {
  startRestartablePlatform,
  type RestartablePlatform,
  type StoreKind,
} from './restartable-platform.js'

/**
 * What the worker SDK delivery tests share (test/serverless/worker-sdk-delivery-*.test.ts):
 * handlers, gates and loggers that record what a worker did, the server's log, and
 * `deliverySuite`, the platform each suite restarts and the calls it makes to it.
 */

export type Json = Record<string, unknown>
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Handlers that run until stopped (at most 20 s), recording which worker ran when: to show that
 * a job never runs on two workers at once.
 */
export function recordedRuns() {
  const runs: Array<{ worker: string; startedAt: number; stoppedAt?: number }> = []
  const handler = (worker: string) => async (_job: unknown, context: JobContext) => {
    const run: (typeof runs)[number] = { worker, startedAt: Date.now() }
    runs.push(run)
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 20_000)
      context.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        resolve()
      })
    })
    run.stoppedAt = Date.now()
    return { worker }
  }
  return { runs, handler }
}

export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(20)
  }
}

export function gate() {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

export interface LogLine {
  level: 'info' | 'warn' | 'error'
  message: string
  fields: Record<string, unknown> | undefined
}

export function collectingLogger(lines: LogLine[]): WorkerLogger {
  const add = (level: LogLine['level']) => (message: string, fields?: Record<string, unknown>) =>
    lines.push({ level, message, fields })
  return { info: add('info'), warn: add('warn'), error: add('error') }
}

/**
 * The server's log: the URLs of the requests it received (the worker routes, with their
 * queries), the ids of the jobs its sweeps re-queued and, where asked for, every message.
 */
export function serverLog(seen: {
  urls: string[]
  requeued: string[]
  messages?: string[]
}): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line === '') continue
        const entry = JSON.parse(line) as {
          msg?: string
          req?: { url?: string }
          requeued?: string[]
        }
        if (entry.msg !== undefined) seen.messages?.push(entry.msg)
        if (entry.msg === 'incoming request' && entry.req?.url) seen.urls.push(entry.req.url)
        if (entry.msg === 'job sweep') seen.requeued.push(...(entry.requeued ?? []))
      }
      done()
    },
  })
  // At `debug`: the per-job routes (take, done, ...) write their request log only then.
  return pino({ level: 'debug' }, sink)
}

/**
 * The platform a delivery suite runs on (on `store`) and its calls: call it in the suite's
 * `describe`, where it adds the hooks that start the platform (its log in `urls`), stop the
 * workers `start` started and run `cleanups` after each test (starting the platform again
 * when the test left it stopped), and close it at the end. `platform()` is the running platform,
 * from the first `beforeAll` on. `withPlatform: false`: no platform of its own, for tests that
 * pass theirs to each call.
 */
export function deliverySuite(
  store: StoreKind,
  { withPlatform = true }: { withPlatform?: boolean } = {},
) {
  let platform: RestartablePlatform
  const urls: string[] = []
  const workers: WorkerHandle[] = []
  const cleanups: Array<() => Promise<void>> = []

  const createEndpoint = async (on = platform): Promise<string> => {
    const response = await on.call('/v2/serverless', {
      method: 'POST',
      json: { name: 'delivery', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    expect(response.status).toBe(201)
    return ((await response.json()) as { id: string }).id
  }
  const submit = async (endpointId: string, input: Json = {}, on = platform) => {
    const response = await on.call(`/v2/${endpointId}/run`, { method: 'POST', json: { input } })
    expect(response.status).toBe(200)
    return ((await response.json()) as { id: string }).id
  }
  const status = async (endpointId: string, jobId: string, on = platform) =>
    (await (await on.call(`/v2/${endpointId}/status/${jobId}`)).json()) as Json
  const finished = (endpointId: string, jobId: string, on = platform, timeoutMs = 15_000) =>
    eventually(
      `job ${jobId} finished`,
      async () => {
        const job = await status(endpointId, jobId, on)
        return job.status === 'COMPLETED' || job.status === 'FAILED' ? job : undefined
      },
      timeoutMs,
    )
  const start = (
    endpointId: string,
    handler: Parameters<typeof serve>[0],
    options: ServeOptions = {},
    base = platform.url,
  ) => {
    const worker = serve(handler, {
      endpointUrl: `${base}/v2/${endpointId}`,
      apiKey: TEST_ADMIN_KEY,
      logger: null,
      pingIntervalMs: 200,
      ...options,
    })
    workers.push(worker)
    return worker
  }
  const calls = (endpointId: string, route: string, from = 0) =>
    urls.slice(from).filter((url) => url.startsWith(`/v2/${endpointId}/${route}/`))

  beforeAll(async () => {
    if (!withPlatform) return
    platform = await startRestartablePlatform(
      store,
      {},
      { logger: serverLog({ urls, requeued: [] }) },
    )
  })
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop({ gracePeriodMs: 0 })))
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    await platform?.start()
  })
  afterAll(async () => {
    await platform?.close()
  })

  return {
    platform: () => platform,
    urls,
    cleanups,
    createEndpoint,
    submit,
    status,
    finished,
    start,
    calls,
  }
}
