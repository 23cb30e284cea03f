import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { ApiClient, readEvents } from '../client/api-client.js'
import { devBanner, devReadyJson } from './dev-banner.js'
import { HandlerWatch } from './dev-watch.js'

/** The platform `podyard dev` started in-process (main.ts), and how to stop all of it. */
export interface DevPlatform {
  url: string
  apiKey: string
  dataDir: string
  /** A data directory of its own, removed by stop(). */
  throwaway: boolean
  /** Stops the server and every workload it started, and removes a throwaway data dir. */
  stop(): Promise<void>
}

/** The image name of dev endpoints: under the process driver an image is a name (args runs). */
export const DEV_IMAGE = 'podyard/dev'
/** Changed on each restart: a new endpoint version rolls the workers (docs/serverless-workers.md). */
export const RELOAD_VARIABLE = 'PODYARD_DEV_RELOAD'
const WORKER_POLL_MS = 500
const STATUS_POLL_MS = 200
/** How long a worker gone from the list is still followed, for its last lines (events poll at 500 ms). */
const GONE_GRACE_MS = 2_000

export interface DevSessionOptions {
  /** The handler file, absolute. */
  file: string
  command: string
  env: Record<string, string>
  workers: number
  concurrency: number | undefined
  /** The folder watched (`--watch`), else only the file. */
  watchFolder: boolean
  /**
   * `--json`: one JSON line when ready and one per test job on stdout (print); the workers'
   * output and restarts go to stderr (progress) as text.
   */
  json: boolean
  /** The job run once at start: `--input`, else test_input.json beside the handler. */
  testJob: { from: string; body: Record<string, unknown> } | undefined
  /**
   * What to do about a line of a worker's output that says an import failed (dev-hints.ts):
   * printed once the worker has died of it, once per package until the handler changes.
   */
  hint(line: string): string | undefined
  print(text: string): void
  progress(text: string): void
}

interface EndpointJson {
  id: string
  name: string
  version: number
}
interface WorkerJson {
  id: string
  status: string
  reason: string | null
}
interface JobJson {
  id: string
  status: string
  delayTime?: number
  executionTime?: number
  output?: unknown
  error?: unknown
}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'])
/** Waits `ms`, or less once `signal` aborts; never rejects. */
const sleep = (ms: number, signal: AbortSignal) =>
  delay(ms, undefined, { signal }).catch(() => undefined)

/**
 * One `podyard dev` run over a started platform: the handler's endpoint, the banner, the
 * workers' output inline, restarts on change, the test job. `close()` ends what it started
 * here; the platform is stopped by its owner.
 */
export class DevSession {
  private readonly client: ApiClient
  private readonly closing = new AbortController()
  /** The workers whose output is followed, each with what ends its stream. */
  private readonly followed = new Map<string, { stream: AbortController; goneSince?: number }>()
  /** Workers gone (or the session closing): never followed again. */
  private readonly done = new Set<string>()
  /** Where each worker's stream was: a stream the server ends early is resumed from there. */
  private readonly lastEventIds = new Map<string, string>()
  private readonly throttledSeen = new Set<string>()
  /** Per worker, the hint its output called for, and whether it died (in either order). */
  private readonly hintsPending = new Map<string, { hint?: string; died?: boolean }>()
  /** The hints printed since the handler last changed: each once, not at every restart. */
  private readonly hinted = new Set<string>()
  private watch: HandlerWatch | undefined
  private endpointId = ''
  private revision = 0
  /** Tells this session's endpoint versions from an earlier session's. */
  private readonly session = randomBytes(4).toString('hex')
  private restarting: Promise<void> = Promise.resolve()
  private readonly tasks: Promise<unknown>[] = []

  constructor(
    private readonly platform: DevPlatform,
    private readonly options: DevSessionOptions,
  ) {
    this.client = new ApiClient(platform.url, platform.apiKey)
  }

  /** A line for people: stdout, or stderr under --json (stdout is JSON then). */
  private say(text: string): void {
    if (this.options.json) this.options.progress(text)
    else this.options.print(text)
  }

  get name(): string {
    return path.basename(this.options.file).replace(/\.[^.]+$/, '') || 'handler'
  }

  async start(): Promise<void> {
    const endpoint = await this.ensureEndpoint()
    this.endpointId = endpoint.id
    const { file, watchFolder, workers, concurrency, command } = this.options
    const view = {
      handlerName: path.basename(file),
      baseUrl: this.platform.url,
      apiKey: this.platform.apiKey,
      endpointId: endpoint.id,
      endpointName: endpoint.name,
      command,
      workers,
      concurrency,
      dataDir: this.platform.dataDir,
      throwaway: this.platform.throwaway,
      watching: watchFolder ? `${path.dirname(file)}/` : path.basename(file),
      exampleInput: this.options.testJob?.body.input ?? { prompt: 'hello' },
    }
    this.options.print(this.options.json ? devReadyJson(view) : devBanner(view))
    this.tasks.push(this.followWorkers())
    this.watch = new HandlerWatch({
      file,
      folder: watchFolder,
      dataDir: this.platform.dataDir,
      onChange: (name) => this.onChange(name),
    })
    this.watch.start()
    if (this.options.testJob) this.tasks.push(this.runTestJob(this.options.testJob))
  }

  async close(): Promise<void> {
    this.closing.abort()
    this.watch?.close()
    await this.restarting
    await Promise.allSettled(this.tasks)
  }

  /**
   * The endpoint's definition. The reload variable differs in every session and restart, so that
   * each moves the endpoint's version: workers left from an earlier session on a kept data
   * directory (`podyard dev` killed) are replaced, never reused with older code.
   */
  private endpointBody() {
    return {
      name: this.name,
      image: DEV_IMAGE,
      args: this.options.command,
      env: { ...this.options.env, [RELOAD_VARIABLE]: `${this.session}.${this.revision}` },
      disk: 1,
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      workers: { min: this.options.workers, max: this.options.workers },
    }
  }

  /** The endpoint named after the file: created, or (a kept data directory) brought up to date. */
  private async ensureEndpoint(): Promise<EndpointJson> {
    const { endpoints } = await this.client.get<{ endpoints: EndpointJson[] }>('/v2/serverless')
    const existing = endpoints.find((e) => e.name === this.name)
    if (existing === undefined) {
      return this.client.request<EndpointJson>('POST', '/v2/serverless', this.endpointBody())
    }
    return this.client.request<EndpointJson>(
      'PATCH',
      `/v2/serverless/${existing.id}`,
      this.endpointBody(),
    )
  }

  private onChange(name: string | undefined): void {
    if (this.closing.signal.aborted) return
    this.restarting = this.restarting.then(() => this.restart(name))
  }

  private async restart(name: string | undefined): Promise<void> {
    if (this.closing.signal.aborted) return
    this.revision += 1
    this.hinted.clear()
    try {
      const endpoint = await this.client.request<EndpointJson>(
        'PATCH',
        `/v2/serverless/${this.endpointId}`,
        this.endpointBody(),
      )
      this.say(
        `${name ?? path.basename(this.options.file)} changed: restarting the worker ` +
          `(endpoint version ${endpoint.version}; queued jobs wait for it)`,
      )
    } catch (error) {
      this.options.progress(
        `podyard dev: could not restart the worker: ${(error as Error).message}`,
      )
    }
  }

  /** Follows the output of every worker of the endpoint, each line prefixed by its worker id. */
  private async followWorkers(): Promise<void> {
    const signal = this.closing.signal
    while (!signal.aborted) {
      try {
        const { workers } = await this.client.get<{ workers: WorkerJson[] }>(
          `/v2/serverless/${this.endpointId}/workers`,
        )
        for (const worker of workers) {
          if (worker.status === 'THROTTLED') {
            if (!this.throttledSeen.has(worker.id)) {
              this.throttledSeen.add(worker.id)
              this.options.progress(`${worker.id} * waiting for room: ${worker.reason ?? ''}`)
            }
            continue
          }
          if (this.followed.has(worker.id) || this.done.has(worker.id)) continue
          const stream = new AbortController()
          this.followed.set(worker.id, { stream })
          this.tasks.push(this.followLogs(worker.id, stream))
        }
        this.endFollowsOfGone(new Set(workers.map((w) => w.id)))
      } catch (error) {
        if (!signal.aborted) this.options.progress(`podyard dev: ${(error as Error).message}`)
      }
      await sleep(WORKER_POLL_MS, signal)
    }
  }

  /**
   * A stopped worker leaves the list, but the server follows its system log until the reader
   * hangs up: its stream is ended once it has been gone long enough for its last lines.
   */
  private endFollowsOfGone(listed: Set<string>): void {
    const now = Date.now()
    for (const [workerId, follow] of this.followed) {
      if (listed.has(workerId)) {
        follow.goneSince = undefined
        continue
      }
      follow.goneSince ??= now
      if (now - follow.goneSince >= GONE_GRACE_MS) {
        this.done.add(workerId)
        this.followed.delete(workerId)
        this.lastEventIds.delete(workerId)
        this.hintsPending.delete(workerId)
        follow.stream.abort()
      }
    }
  }

  private async followLogs(workerId: string, stream: AbortController): Promise<void> {
    // A signal of its own per stream: fetch leaves its abort listener on the signal it is given,
    // and a session that restarts its worker a hundred times would pile them up on one.
    const stop = () => stream.abort()
    this.closing.signal.addEventListener('abort', stop, { once: true })
    try {
      const resumeFrom = this.lastEventIds.get(workerId)
      const response = await this.client.open(
        `/v2/serverless/${this.endpointId}/workers/${workerId}/logs?tail=5000`,
        {
          signal: stream.signal,
          ...(resumeFrom ? { headers: { 'last-event-id': resumeFrom } } : {}),
        },
      )
      for await (const event of readEvents(response)) {
        if (event.id !== undefined) this.lastEventIds.set(workerId, event.id)
        const { source, line } = JSON.parse(event.data) as { source: string; line: string }
        this.say(`${workerId} ${source === 'system' ? '*' : '|'} ${line}`)
        this.noteForHint(workerId, source, line)
      }
    } catch (error) {
      if (!stream.signal.aborted) {
        this.options.progress(`podyard dev: the log of ${workerId}: ${(error as Error).message}`)
      }
    } finally {
      this.closing.signal.removeEventListener('abort', stop)
      // Ended by the server while the worker is still there: the next poll follows it again.
      if (this.followed.get(workerId)?.stream === stream) this.followed.delete(workerId)
    }
  }

  /**
   * A worker that died after its output said an import failed: the hint, once. A handler that
   * only logs such a line and goes on gets none; the order of its output and of the platform's
   * event of its death is not relied on (they are two logs).
   */
  private noteForHint(workerId: string, source: string, line: string): void {
    const state = this.hintsPending.get(workerId) ?? {}
    if (source === 'system') {
      if (!line.startsWith('UNHEALTHY')) return
      state.died = true
    } else {
      const hint = this.options.hint(line)
      if (hint === undefined) return
      state.hint ??= hint
    }
    this.hintsPending.set(workerId, state)
    if (state.hint === undefined || !state.died) return
    this.hintsPending.delete(workerId)
    if (this.hinted.has(state.hint)) return
    this.hinted.add(state.hint)
    this.say(state.hint)
  }

  /** Runs the test job once, through the job API, and prints its result and timings. */
  private async runTestJob(job: { from: string; body: Record<string, unknown> }): Promise<void> {
    const signal = this.closing.signal
    try {
      const started = Date.now()
      const queued = await this.client.request<JobJson>(
        'POST',
        `/v2/${this.endpointId}/run`,
        job.body,
      )
      this.say(`${job.from}: queued as job ${queued.id}`)
      let status = queued
      while (!TERMINAL.has(status.status)) {
        await sleep(STATUS_POLL_MS, signal)
        if (signal.aborted) return
        status = await this.client.get<JobJson>(`/v2/${this.endpointId}/status/${queued.id}`)
      }
      const totalMs = Date.now() - started
      if (this.options.json) {
        return this.options.print(
          JSON.stringify({
            testJob: {
              from: job.from,
              id: status.id,
              status: status.status,
              totalMs,
              delayTime: status.delayTime ?? null,
              executionTime: status.executionTime ?? null,
              ...(status.error === undefined ? { output: status.output } : { error: status.error }),
            },
          }),
        )
      }
      const seconds = (ms: number | undefined) =>
        ms === undefined ? '?' : `${(ms / 1000).toFixed(2)} s`
      this.options.print(
        [
          `${job.from}: ${status.status} in ${seconds(totalMs)} ` +
            `(queued ${seconds(status.delayTime)}, ran ${seconds(status.executionTime)})`,
          JSON.stringify(
            status.error === undefined ? { output: status.output } : { error: status.error },
            null,
            2,
          ),
        ].join('\n'),
      )
    } catch (error) {
      if (!signal.aborted) {
        this.options.progress(`podyard dev: ${job.from}: ${(error as Error).message}`)
      }
    }
  }
}
