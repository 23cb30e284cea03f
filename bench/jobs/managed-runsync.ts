/**
 * `/runsync` through workers the platform starts itself (bench/README.md): a warm worker of a
 * given command (the bench's TS worker, the README's example, a runpod-python handler), and the
 * cold start of a TS worker endpoint at zero workers.
 */
import { performance } from 'node:perf_hooks'
import {
  createEndpoint,
  fmt,
  json,
  percentile,
  reapWorkers,
  request,
  sleep,
  timeRunsync,
  type BenchServer,
} from './bench-server.js'

export interface WorkerCommand {
  /** What the figure is called. */
  name: string
  /** The endpoint's `args`: the command line of its worker (the process driver runs it). */
  args: string
  env?: Record<string, string>
}

/** A CPU endpoint whose workers run `command`. */
function managedEndpoint(
  server: BenchServer,
  command: WorkerCommand,
  workers: { min: number; max: number },
): Promise<string> {
  return createEndpoint(server, command.name.replace(/[^a-z0-9-]/gi, '-').slice(0, 40), {
    image: 'bench/worker',
    gpu: undefined,
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
    disk: 5,
    args: command.args,
    env: command.env ?? {},
    workers: { ...workers, idleTimeout: 60 },
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
  })
}

/** Deletes the endpoint and waits for its workers to be gone. */
async function deleteEndpoint(server: BenchServer, id: string): Promise<void> {
  await request('DELETE', `${server.url}/v2/serverless/${id}`)
  await reapWorkers(server.dataDir)
}

/** Waits until the endpoint has an IDLE worker (its first take is open). */
async function idleWorker(server: BenchServer, id: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const list = await json<{ workers: Array<{ status: string; reason: string | null }> }>(
      'GET',
      `${server.url}/v2/serverless/${id}/workers`,
    )
    if (list.workers.some((w) => w.status === 'IDLE')) return
    if (Date.now() > deadline) {
      throw new Error(`no idle worker within ${timeoutMs} ms: ${JSON.stringify(list.workers)}`)
    }
    await sleep(50)
  }
}

/** Sequential `/runsync` calls through one warm managed worker running `command`. */
export async function warmManagedRunsync(
  server: BenchServer,
  command: WorkerCommand,
  count: number,
  warmup: number,
  body: unknown = { input: { text: 'hello' } },
): Promise<number[]> {
  const id = await managedEndpoint(server, command, { min: 1, max: 1 })
  try {
    await idleWorker(server, id)
    const durations = await timeRunsync(`${server.url}/v2/${id}`, count, warmup, body)
    console.log(
      `\n/runsync through a warm managed worker: ${command.name} (${count} sequential, after ${warmup})`,
    )
    console.log(
      `  round trip: p50 ${fmt(percentile(durations, 50))}, p99 ${fmt(percentile(durations, 99))}, ` +
        `max ${fmt(durations.at(-1) ?? Number.NaN)}`,
    )
    return durations
  } finally {
    await deleteEndpoint(server, id)
  }
}

/**
 * The first `/runsync` on a fresh endpoint with no worker (min 0), `rounds` times: the job wakes
 * the autoscaler, which starts a worker running `command`, which takes the job. Sorted ms.
 */
export async function coldStarts(
  server: BenchServer,
  command: WorkerCommand,
  rounds: number,
): Promise<number[]> {
  const durations: number[] = []
  for (let round = 0; round < rounds; round++) {
    const id = await managedEndpoint(server, command, { min: 0, max: 1 })
    try {
      // Past the autoscaler's pass that saw the new endpoint with nothing queued.
      await sleep(1_200)
      const t0 = performance.now()
      const result = await json<{ status: string }>(
        'POST',
        `${server.url}/v2/${id}/runsync?wait=60000`,
        { input: { text: 'cold' } },
      )
      durations.push(performance.now() - t0)
      if (result.status !== 'COMPLETED') throw new Error(`cold start ended ${result.status}`)
    } finally {
      await deleteEndpoint(server, id)
    }
  }
  durations.sort((a, b) => a - b)
  console.log(
    `\ncold start: first /runsync on an endpoint at zero workers (${command.name}), ${rounds} rounds`,
  )
  console.log(
    `  p50 ${fmt(percentile(durations, 50))}, min ${fmt(durations[0] ?? Number.NaN)}, ` +
      `max ${fmt(durations.at(-1) ?? Number.NaN)}`,
  )
  return durations
}
