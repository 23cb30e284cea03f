import { readFile } from 'node:fs/promises'
import { InvalidArgumentError, type Command } from 'commander'
import type { ApiClient } from '../client/api-client.js'
import {
  clientFrom,
  createdOutput,
  withClientOptions,
  withQuietOption,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'
import { UsageError } from './usage-error.js'
import { readProcessStdin } from './read-stdin.js'

/** A job as `/status`, `/runsync` and `/cancel` show it (docs/job-api.md, "Job view"). */
interface JobJson {
  id: string
  status: string
  delayTime?: number
  executionTime?: number
  output?: unknown
  error?: string
  workerId?: string
}

interface StreamJson {
  status: string
  stream: Array<{ output: unknown }>
}

/** `/health` as the CLI reads it (docs/job-api.md, "Health"). */
interface HealthJson {
  jobs: Record<string, number>
  workers: Record<string, number>
  startBackoff?: {
    failures: number
    lastFailure: { workerId: string; reason: string; at: string; lastLines?: string[] }
    nextStartAt: string
  }
}

/** The failed worker's last lines, indented under a line that names it; none when it wrote none. */
function lastLinesOf(
  endpointId: string,
  lastFailure: { workerId: string; lastLines?: string[] },
): string[] {
  const lines = lastFailure.lastLines ?? []
  if (lines.length === 0) return []
  return [
    `the last lines of worker ${lastFailure.workerId} (all: podyard endpoints worker-logs ${endpointId} ${lastFailure.workerId}):`,
    ...lines.map((line) => `  | ${line}`),
  ]
}

export interface JobsCommandDeps {
  print(text: string): void
  /** A line on standard error: what a waiting command waits for. */
  progress(text: string): void
  sleep(ms: number): Promise<void>
  /** All of standard input as text, for `--input-file -`; defaults to process.stdin. */
  readStdin?(): Promise<string>
}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'])
/** The server's bounds of `?wait=` on /runsync and /status-sync (docs/job-api.md, "Waits"). */
const SERVER_WAIT_MIN_MS = 1_000
const SERVER_WAIT_MAX_MS = 300_000
/** One /status-sync call of `status --wait`: well under fetch's 300 s header timeout. */
const STATUS_WAIT_STEP_MS = 90_000
/** `runsync`'s default wait: the server's default `?wait=` (docs/job-api.md, "Waits"). */
const RUNSYNC_DEFAULT_WAIT_MS = 90_000
/** When `runsync` first says on stderr what it waits for (a job not over by then), and how often. */
const RUNSYNC_FIRST_REPORT_MS = 2_000
const RUNSYNC_REPORT_EVERY_MS = 5_000
/** A pause after an empty /stream read (the server already waits up to 2 s for a chunk). */
const STREAM_IDLE_PAUSE_MS = 100

function milliseconds(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected milliseconds, e.g. 60000')
  return Number(value)
}

interface SubmitFlags extends ClientFlags {
  input?: string
  inputFile?: string
  webhook?: string
  executionTimeout?: number
  ttl?: number
  lowPriority?: boolean
  quiet?: boolean
}

/** The job input from `--input` or `--input-file` (`-` = standard input), parsed as JSON. */
export async function inputOf(
  flags: Pick<SubmitFlags, 'input' | 'inputFile'>,
  readStdin: () => Promise<string>,
): Promise<unknown> {
  if (flags.input !== undefined && flags.inputFile !== undefined) {
    throw new UsageError('give either --input or --input-file, not both')
  }
  let text: string
  let source: string
  if (flags.input !== undefined) {
    text = flags.input
    source = '--input'
  } else if (flags.inputFile !== undefined) {
    source = `--input-file ${flags.inputFile}`
    try {
      text = flags.inputFile === '-' ? await readStdin() : await readFile(flags.inputFile, 'utf8')
    } catch (error) {
      throw new UsageError(`${source}: cannot read it: ${(error as Error).message}`)
    }
  } else {
    throw new UsageError(
      "give the job input as --input '<json>' or --input-file <path> ('-' for standard input)",
    )
  }
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new UsageError(`${source}: not valid JSON: ${(error as Error).message}`)
  }
}

/** The `/run` and `/runsync` body: only what was given; the server checks every bound. */
export async function submissionBody(
  flags: SubmitFlags,
  readStdin: () => Promise<string>,
): Promise<Record<string, unknown>> {
  const policy = {
    ...(flags.executionTimeout !== undefined ? { executionTimeout: flags.executionTimeout } : {}),
    ...(flags.ttl !== undefined ? { ttl: flags.ttl } : {}),
    ...(flags.lowPriority ? { lowPriority: true } : {}),
  }
  return {
    input: await inputOf(flags, readStdin),
    ...(flags.webhook !== undefined ? { webhook: flags.webhook } : {}),
    ...(Object.keys(policy).length > 0 ? { policy } : {}),
  }
}

function jobDetail(job: JobJson): string {
  const ms = (value: number | undefined) => (value === undefined ? null : `${value} ms`)
  return [
    formatTable(
      ['ID', 'STATUS', 'DELAY', 'EXECUTION', 'WORKER'],
      [[job.id, job.status, ms(job.delayTime), ms(job.executionTime), job.workerId ?? null]],
    ),
    ...(job.output !== undefined ? [`output: ${JSON.stringify(job.output)}`] : []),
    ...(job.error !== undefined ? [`error: ${job.error}`] : []),
  ].join('\n')
}

const jobPath = (endpointId: string, rest: string) => `/v2/${encodeURIComponent(endpointId)}${rest}`

/**
 * After a command that waits for a job: exit 0 only when it COMPLETED. A job that failed, was
 * cancelled, timed out or is still running when the wait ends is an error for a script.
 */
function requireCompleted(endpointId: string, job: JobJson): void {
  if (job.status === 'COMPLETED') return
  if (!TERMINAL.has(job.status)) {
    throw new Error(
      `job ${job.id} is still ${job.status} after the wait; follow it with: podyard jobs status ${endpointId} ${job.id} --wait`,
    )
  }
  throw new Error(`job ${job.id} ended ${job.status}${job.error ? `: ${job.error}` : ''}`)
}

/** `status --wait [ms]`: /status-sync until the job ends or `limitMs` (undefined: no limit) passes. */
async function waitForEnd(
  client: ApiClient,
  endpointId: string,
  jobId: string,
  limitMs: number | undefined,
): Promise<JobJson> {
  const deadline = limitMs === undefined ? Infinity : Date.now() + limitMs
  for (;;) {
    const remaining = deadline - Date.now()
    const wait = Math.max(SERVER_WAIT_MIN_MS, Math.min(STATUS_WAIT_STEP_MS, remaining))
    const job = await client.get<JobJson>(
      jobPath(endpointId, `/status-sync/${encodeURIComponent(jobId)}?wait=${wait}`),
    )
    if (TERMINAL.has(job.status) || deadline - Date.now() <= 0) return job
  }
}

/** What a waiting `runsync` says: the job's status, the ready workers, and why workers fail. */
function waitingLine(job: JobJson, health: HealthJson, nowMs: number): string {
  const ready = health.workers.ready ?? 0
  const parts = [`waiting for job ${job.id} (${job.status}): ${ready} ready worker(s)`]
  const backoff = health.startBackoff
  if (backoff) {
    const dueInS = Math.max(0, Math.ceil((Date.parse(backoff.nextStartAt) - nowMs) / 1000))
    parts.push(
      `the last worker ${backoff.lastFailure.reason} (${backoff.failures} failed in a row)`,
      dueInS > 0 ? `next worker starts in ${dueInS} s` : 'a worker is being started',
    )
  }
  return parts.join('; ')
}

/**
 * `runsync`: one /runsync call, then, while the job is not over and `waitMs` has not passed,
 * /status-sync calls, saying on stderr before each what it waits for (from /health).
 */
async function runSync(
  client: ApiClient,
  endpointId: string,
  body: Record<string, unknown>,
  waitMs: number,
  progress: (text: string) => void,
): Promise<JobJson> {
  const deadline = Date.now() + waitMs
  const step = (remaining: number, most: number) =>
    Math.max(SERVER_WAIT_MIN_MS, Math.min(most, remaining))
  let job = await client.request<JobJson>(
    'POST',
    jobPath(endpointId, `/runsync?wait=${step(waitMs, RUNSYNC_FIRST_REPORT_MS)}`),
    body,
  )
  // Each failed worker's last lines are shown once, when its failure is first seen.
  let shownFailure: string | undefined
  for (;;) {
    const remaining = deadline - Date.now()
    if (TERMINAL.has(job.status) || remaining <= 0) return job
    const health = await client.get<HealthJson>(jobPath(endpointId, '/health'))
    progress(waitingLine(job, health, Date.now()))
    const failure = health.startBackoff?.lastFailure
    if (failure && failure.workerId !== shownFailure) {
      shownFailure = failure.workerId
      for (const line of lastLinesOf(endpointId, failure)) progress(line)
    }
    job = await client.get<JobJson>(
      jobPath(
        endpointId,
        `/status-sync/${encodeURIComponent(job.id)}?wait=${step(remaining, RUNSYNC_REPORT_EVERY_MS)}`,
      ),
    )
  }
}

/**
 * `podyard jobs ...`: the job API of a serverless endpoint (docs/job-api.md, "CLI"). Thin: each
 * command is one job API call (or a loop of them), printed as a table or `--json`.
 */
export function addJobsCommands(program: Command, deps: JobsCommandDeps): void {
  const readStdin = deps.readStdin ?? readProcessStdin
  const jobs = program
    .command('jobs')
    .description('run and follow jobs of a serverless endpoint, on a running server')
  const json = (value: unknown) => JSON.stringify(value, null, 2)
  const showJob = (flags: ClientFlags, job: JobJson) =>
    deps.print(flags.json ? json(job) : jobDetail(job))

  const withSubmitOptions = (command: Command) =>
    withClientOptions(command)
      .argument('<endpoint-id>')
      .option('--input <json>', 'the job input, a JSON object')
      .option('--input-file <path>', "read the input from a file ('-' for standard input)")
      .option('--webhook <url>', 'URL to POST the finished job to')
      .option('--execution-timeout <ms>', 'longest run time once a worker has it', milliseconds)
      .option('--ttl <ms>', 'whole lifetime of the job from submission', milliseconds)
      .option('--low-priority', 'never scale workers up for this job')

  withQuietOption(
    withSubmitOptions(jobs.command('run').description('queue a job; prints its id')),
  ).action(async (endpointId: string, flags: SubmitFlags) => {
    const body = await submissionBody(flags, readStdin)
    const queued = await clientFrom(flags).request<JobJson>(
      'POST',
      jobPath(endpointId, '/run'),
      body,
    )
    deps.print(createdOutput(flags, queued, `Queued job ${queued.id} (${queued.status}).`))
  })

  withSubmitOptions(
    jobs
      .command('runsync')
      .description('queue a job and wait for it; exits non-zero unless it COMPLETED'),
  )
    .option(
      '--wait <ms>',
      `how long to wait for the job (${SERVER_WAIT_MIN_MS} to ${SERVER_WAIT_MAX_MS}; default ${RUNSYNC_DEFAULT_WAIT_MS})`,
      milliseconds,
    )
    .action(async (endpointId: string, flags: SubmitFlags & { wait?: number }) => {
      const body = await submissionBody(flags, readStdin)
      const wait = flags.wait ?? RUNSYNC_DEFAULT_WAIT_MS
      if (wait < SERVER_WAIT_MIN_MS || wait > SERVER_WAIT_MAX_MS) {
        throw new UsageError(
          `--wait: ${wait} is out of range: ${SERVER_WAIT_MIN_MS} to ${SERVER_WAIT_MAX_MS} ms`,
        )
      }
      const job = await runSync(clientFrom(flags), endpointId, body, wait, deps.progress)
      showJob(flags, job)
      requireCompleted(endpointId, job)
    })

  withClientOptions(
    jobs
      .command('status')
      .description('status, timings and output of a job')
      .argument('<endpoint-id>')
      .argument('<job-id>'),
  )
    .option(
      '--wait [ms]',
      'wait until the job ends (at most ms when given); non-zero unless it COMPLETED',
    )
    .action(
      async (endpointId: string, jobId: string, flags: ClientFlags & { wait?: string | true }) => {
        const client = clientFrom(flags)
        if (flags.wait === undefined) {
          return showJob(
            flags,
            await client.get<JobJson>(jobPath(endpointId, `/status/${encodeURIComponent(jobId)}`)),
          )
        }
        if (flags.wait !== true && !/^\d+$/.test(flags.wait)) {
          throw new UsageError(`--wait: "${flags.wait}" is not milliseconds, e.g. 60000`)
        }
        const limit = flags.wait === true ? undefined : Number(flags.wait)
        const job = await waitForEnd(client, endpointId, jobId, limit)
        showJob(flags, job)
        requireCompleted(endpointId, job)
      },
    )

  withClientOptions(
    jobs
      .command('stream')
      .description(
        'print the stream of a job as JSON lines until it ends; non-zero unless it COMPLETED',
      )
      .argument('<endpoint-id>')
      .argument('<job-id>'),
  ).action(async (endpointId: string, jobId: string, flags: ClientFlags) => {
    const client = clientFrom(flags)
    const path = jobPath(endpointId, `/stream/${encodeURIComponent(jobId)}`)
    for (;;) {
      const read = await client.get<StreamJson>(path)
      for (const chunk of read.stream) deps.print(JSON.stringify(chunk.output))
      if (TERMINAL.has(read.status)) break
      if (read.stream.length === 0) await deps.sleep(STREAM_IDLE_PAUSE_MS)
    }
    const job = await client.get<JobJson>(
      jobPath(endpointId, `/status/${encodeURIComponent(jobId)}`),
    )
    requireCompleted(endpointId, job)
  })

  withClientOptions(
    jobs
      .command('cancel')
      .description('cancel a queued or running job')
      .argument('<endpoint-id>')
      .argument('<job-id>'),
  ).action(async (endpointId: string, jobId: string, flags: ClientFlags) => {
    const job = await clientFrom(flags).request<JobJson>(
      'POST',
      jobPath(endpointId, `/cancel/${encodeURIComponent(jobId)}`),
    )
    if (flags.json) return deps.print(json(job))
    deps.print(
      job.status === 'CANCELLED'
        ? `Cancelled job ${job.id}.`
        : `Job ${job.id} had already ended: ${job.status}.`,
    )
  })

  withClientOptions(
    jobs
      .command('retry')
      .description('requeue a FAILED or TIMED_OUT job (same id and input)')
      .argument('<endpoint-id>')
      .argument('<job-id>'),
  ).action(async (endpointId: string, jobId: string, flags: ClientFlags) => {
    const job = await clientFrom(flags).request<JobJson>(
      'POST',
      jobPath(endpointId, `/retry/${encodeURIComponent(jobId)}`),
    )
    deps.print(flags.json ? json(job) : `Requeued job ${job.id} (${job.status}).`)
  })

  withClientOptions(
    jobs
      .command('purge')
      .description('delete the queued jobs of an endpoint (not the running or finished ones)')
      .argument('<endpoint-id>'),
  ).action(async (endpointId: string, flags: ClientFlags) => {
    const result = await clientFrom(flags).request<{ removed: number; status: string }>(
      'POST',
      jobPath(endpointId, '/purge-queue'),
    )
    deps.print(flags.json ? json(result) : `Removed ${result.removed} queued job(s).`)
  })

  withClientOptions(
    jobs
      .command('health')
      .description('job and worker counts of an endpoint')
      .argument('<endpoint-id>'),
  ).action(async (endpointId: string, flags: ClientFlags) => {
    const health = await clientFrom(flags).get<HealthJson>(jobPath(endpointId, '/health'))
    if (flags.json) return deps.print(json(health))
    const counts = (record: Record<string, number>) =>
      Object.entries(record)
        .map(([name, n]) => `${name}=${n}`)
        .join(' ')
    const backoff = health.startBackoff
    deps.print(
      [
        `jobs:    ${counts(health.jobs)}`,
        `workers: ${counts(health.workers)}`,
        ...(backoff
          ? [
              `failing: ${backoff.failures} worker(s) in a row, the last ${backoff.lastFailure.workerId} ${backoff.lastFailure.reason} at ${backoff.lastFailure.at}; next start at ${backoff.nextStartAt}`,
              ...lastLinesOf(endpointId, backoff.lastFailure),
            ]
          : []),
      ].join('\n'),
    )
  })
}
