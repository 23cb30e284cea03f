/**
 * The load an anchor's child process (anchor-graphile-worker.ts, anchor-bullmq.ts) puts on its
 * queue, shaped like podyard's throughput part (throughput.ts): jobs added one by one from
 * concurrent submitter loops, a warm-up not counted, then jobs/s from the first add to the last
 * completion. The orchestrator (anchors.ts) passes the settings in BENCH_ANCHOR and reads the
 * `result {json}` line this prints.
 */
import { cpuSeconds, now } from './bench-server.js'

export interface AnchorSettings {
  jobs: number
  warmup: number
  submitters: number
  concurrency: number
  /** graphile-worker: the runner's PostgreSQL pool (its default, and podyard's, is 10). */
  pool: number
  /**
   * graphile-worker: `batched` runs it with the batching its docs recommend for throughput
   * (anchor-graphile-worker.ts); unbatched (its defaults) without it.
   */
  batched?: boolean
  /** graphile-worker: the fresh database; BullMQ: the redis-server's URL. */
  url: string
  /** BullMQ: the redis-server's pid, whose CPU is counted beside the anchor's. */
  storePid?: number
}

export interface AnchorResult {
  jobsPerSecond: number
  addsPerSecond: number
  seconds: number
  /** CPU of the anchor's process (submitters and worker together) per job, ms. */
  cpuMsPerJob: number
  /** CPU of the store's process per job, ms (BullMQ's redis-server; null when not counted). */
  storeCpuMsPerJob: number | null
}

export function anchorSettings(): AnchorSettings {
  const text = process.env.BENCH_ANCHOR
  if (!text) throw new Error('BENCH_ANCHOR (the settings, JSON) is required')
  return JSON.parse(text) as AnchorSettings
}

/** Counts completions and resolves each wait when its count is reached. */
export class CompletionCount {
  private count = 0
  private readonly waits: Array<{ target: number; resolve: () => void }> = []

  completed(): void {
    this.count += 1
    for (let i = this.waits.length - 1; i >= 0; i--) {
      if (this.count >= this.waits[i]!.target) this.waits.splice(i, 1)[0]!.resolve()
    }
  }

  until(target: number): Promise<void> {
    if (this.count >= target) return Promise.resolve()
    return new Promise((resolve) => this.waits.push({ target, resolve }))
  }

  get total(): number {
    return this.count
  }
}

/** `count` jobs through `add` from `submitters` concurrent loops; returns when all are added. */
async function addAll(count: number, submitters: number, add: () => Promise<unknown>) {
  let next = 0
  const loop = async () => {
    while (next < count) {
      next += 1
      await add()
    }
  }
  await Promise.all(Array.from({ length: submitters }, loop))
}

/**
 * The warm-up, then the measured jobs. `settled` runs after the last completion was seen and
 * returns once it is stored (graphile-worker deletes a finished job after its event).
 */
export async function measure(
  settings: AnchorSettings,
  add: () => Promise<unknown>,
  done: CompletionCount,
  settled: () => Promise<void> = async () => {},
): Promise<AnchorResult> {
  if (settings.warmup > 0) {
    const reached = done.until(done.total + settings.warmup)
    await addAll(settings.warmup, settings.submitters, add)
    await reached
    await settled()
  }
  const target = done.total + settings.jobs
  const cpu0 = process.cpuUsage()
  const storeCpu0 = cpuSeconds(settings.storePid)
  const start = now()
  const reached = done.until(target)
  await addAll(settings.jobs, settings.submitters, add)
  const addEnd = now()
  await reached
  await settled()
  const end = now()
  const cpu = process.cpuUsage(cpu0)
  const storeCpu = cpuSeconds(settings.storePid) - storeCpu0
  return {
    jobsPerSecond: (1000 * settings.jobs) / (end - start),
    addsPerSecond: (1000 * settings.jobs) / (addEnd - start),
    seconds: (end - start) / 1000,
    cpuMsPerJob: (cpu.user + cpu.system) / 1000 / settings.jobs,
    storeCpuMsPerJob: settings.storePid === undefined ? null : (1000 * storeCpu) / settings.jobs,
  }
}

export function printResult(result: AnchorResult): void {
  process.stdout.write(`result ${JSON.stringify(result)}\n`)
}
