import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import {
  chunkError,
  exceptionError,
  isStreamResult,
  resultBody,
  streamExceptionError,
  type DoneBody,
} from './job-result.js'
import { abortError } from './errors.js'
import type { Handler, ServeOptions, WorkerHandle } from './serve-options.js'
import { SDK_VERSION_TAG } from './version.js'
import type { WorkerJob } from './worker-protocol.js'

/** The file runpod-python runs locally when no job-take URL is configured. */
export const TEST_INPUT_FILE = 'test_input.json'
/** The worker id of a local test run. */
export const LOCAL_WORKER_ID = 'local'

/** Why a local test run has no job to run (runpod-python exits with 1 then). */
export class LocalTestInputError extends Error {
  override name = 'LocalTestInputError'
}

/** Where a local test's job comes from, and its text. */
export interface LocalTestSource {
  from: '--test_input' | typeof TEST_INPUT_FILE
  text: string
}

/** `--test_input <json>` or `--test_input=<json>` among the program's arguments. */
export function testInputArgument(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--test_input') {
      const value = argv[i + 1]
      if (value === undefined) throw new LocalTestInputError('--test_input needs a JSON value')
      return value
    }
    if (arg.startsWith('--test_input=')) return arg.slice('--test_input='.length)
  }
  return undefined
}

/**
 * runpod-python's mode selection (wire-compat §5.1): `--test_input` runs one job locally even
 * where a job-take URL is set; without a job-take URL, `./test_input.json` does. Undefined: no
 * local run (the worker loop starts, or reports what configuration is missing).
 */
export function localTestSource(
  argv: readonly string[],
  hasTakeUrl: boolean,
  cwd: string,
): LocalTestSource | undefined {
  const argument = testInputArgument(argv)
  if (argument !== undefined) return { from: '--test_input', text: argument }
  if (hasTakeUrl) return undefined
  const file = path.join(cwd, TEST_INPUT_FILE)
  if (!existsSync(file)) return undefined
  return { from: TEST_INPUT_FILE, text: readFileSync(file, 'utf8') }
}

/** The job of a local test: `{"input": ...}` with an `id` (default `local_test`). */
export function localTestJob(source: LocalTestSource): WorkerJob {
  let parsed: unknown
  try {
    parsed = JSON.parse(source.text)
  } catch (error) {
    throw new LocalTestInputError(
      `${source.from} is not JSON: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new LocalTestInputError(`${source.from} must be an object such as {"input": {...}}`)
  }
  const job = parsed as Record<string, unknown>
  if (job.input === undefined || job.input === null) {
    throw new LocalTestInputError(`${source.from} has no "input": nothing to run`)
  }
  const id = typeof job.id === 'string' ? job.id : 'local_test'
  return { ...job, id, input: job.input as WorkerJob['input'] }
}

export interface LocalTestOptions {
  returnAggregateOutput?: boolean
  /** Where the result line goes (default stdout) and where logs go (default stderr). */
  out?: (line: string) => void
  log?: (line: string) => void
}

/** What a local test reports: the job-done body with the job's id and status. */
export interface LocalTestResult extends DoneBody {
  id: string
  status: 'COMPLETED' | 'FAILED'
  executionTimeMs: number
}

/**
 * Runs one job through the handler without any server, as runpod-python's `run_local` does:
 * progress updates and stream chunks are logged, the result is printed as one JSON line
 * (`{"id","status","output"|"error","executionTimeMs"}`). `signal` aborts the handler's.
 */
export async function runLocalTest(
  handler: (job: WorkerJob<never>, context: LocalContext) => unknown,
  job: WorkerJob,
  signal: AbortSignal,
  options: LocalTestOptions = {},
): Promise<LocalTestResult> {
  const out = options.out ?? ((line) => process.stdout.write(`${line}\n`))
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`))
  log(`podyard-worker: running ${job.id} locally (no server): ${JSON.stringify(job.input)}`)
  const started = performance.now()
  const context: LocalContext = {
    id: job.id,
    workerId: LOCAL_WORKER_ID,
    signal,
    progress: async (value) => log(`progress: ${JSON.stringify(value)}`),
  }
  let body: DoneBody
  try {
    let result: unknown = handler(job as WorkerJob<never>, context)
    if (!isStreamResult(result)) result = await result
    body = isStreamResult(result)
      ? await consume(result, options.returnAggregateOutput ?? false, log)
      : resultBody(result)
  } catch (error) {
    body = {
      error: exceptionError(error, {
        workerId: LOCAL_WORKER_ID,
        version: SDK_VERSION_TAG,
        hostname: process.env.RUNPOD_POD_HOSTNAME,
      }),
    }
  }
  const executionTimeMs = Math.round(performance.now() - started)
  const report: LocalTestResult = {
    id: job.id,
    status: body.error === undefined ? 'COMPLETED' : 'FAILED',
    ...body,
    executionTimeMs,
  }
  out(JSON.stringify(report))
  return report
}

export interface LocalContext {
  readonly id: string
  readonly workerId: string
  readonly signal: AbortSignal
  progress(value: unknown): Promise<void>
}

async function consume(
  stream: AsyncIterable<unknown> | Iterable<unknown>,
  aggregate: boolean,
  log: (line: string) => void,
): Promise<DoneBody> {
  const chunks: unknown[] = []
  let index = 0
  try {
    for await (const chunk of stream) {
      const error = chunkError(chunk)
      if (error !== undefined) return { error }
      log(`stream chunk ${index++}: ${JSON.stringify(chunk)}`)
      if (aggregate) chunks.push(chunk)
    }
  } catch (error) {
    return { error: streamExceptionError(error) }
  }
  return { output: chunks }
}

/**
 * A handle over one local test run (runpod-python's `run_local`): the process's exit code is 1
 * when the job fails or there is no valid job to run, as runpod-python's is.
 */
export function localTestWorker(
  handler: Handler<never>,
  source: LocalTestSource,
  options: ServeOptions,
): WorkerHandle {
  const controller = new AbortController()
  let activeJobs = 1
  const done = (async () => {
    try {
      const job = localTestJob(source)
      const report = await runLocalTest(handler, job, controller.signal, {
        returnAggregateOutput: options.returnAggregateOutput ?? false,
      })
      if (report.status === 'FAILED') process.exitCode = 1
    } catch (error) {
      if (!(error instanceof LocalTestInputError)) throw error
      process.stderr.write(`podyard-worker: ${error.message}\n`)
      process.exitCode = 1
    } finally {
      activeJobs = 0
    }
  })()
  return {
    workerId: LOCAL_WORKER_ID,
    get activeJobs() {
      return activeJobs
    },
    done,
    stop: async () => {
      controller.abort(abortError('the worker is stopping'))
      await done
    },
  }
}
