import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { startServe } from '../support/cli.js'
import type { RunEvent } from './run-analysis.js'
import { readProcStatSync } from '../../src/runtime/process/process-group.js'

/**
 * The moving parts of the chaos suite (test/chaos/exactly-once.test.ts): real `podyard serve`
 * processes that can be killed and started again on their data, worker processes, a TCP
 * balancer in front of several replicas, a steady submitter and the handlers' records.
 */

export const WORKER_SCRIPT = path.join(import.meta.dirname, 'chaos-worker.mjs')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `podyard serve` (bin/podyard.js) on a fixed port and data, started again after each death. */
export class ServerProcess {
  private child: ChildProcess | undefined
  private exited: Promise<number | null> | undefined
  readonly url: string

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.url = `http://127.0.0.1:${port}`
  }

  get pid(): number | undefined {
    return this.child?.pid
  }

  async start(): Promise<void> {
    const started = await startServe(['--port', String(this.port)], this.env)
    this.child = started.child
    this.exited = started.exited
  }

  /** SIGKILL (a crash) or SIGTERM (a clean stop); resolves once the process is gone. */
  async stop(signal: 'SIGKILL' | 'SIGTERM'): Promise<number | null> {
    const child = this.child
    if (child === undefined || this.exited === undefined) return null
    this.child = undefined
    child.kill(signal)
    return this.exited
  }
}

/** A worker process started by the rig (not by the platform). */
export class WorkerProcess {
  readonly child: ChildProcess

  constructor(env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [WORKER_SCRIPT], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
  }

  get pid(): number {
    return this.child.pid!
  }

  stop(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) return resolve()
      this.child.once('exit', () => resolve())
      this.child.kill(signal)
    })
  }
}

/**
 * A TCP balancer in front of replicas, as a load balancer in front of a cluster: each new
 * connection goes to the next replica that accepts it. Workers and clients that keep talking to
 * the balancer keep reaching the platform while one replica is dead.
 */
export class TcpBalancer {
  private readonly server: net.Server
  private next = 0
  private readonly sockets = new Set<net.Socket>()

  constructor(private readonly ports: number[]) {
    this.server = net.createServer((client) => this.route(client))
  }

  listen(): Promise<number> {
    return new Promise((resolve) => {
      this.server.listen(0, '127.0.0.1', () => {
        resolve((this.server.address() as net.AddressInfo).port)
      })
    })
  }

  private route(client: net.Socket, tried = 0): void {
    this.sockets.add(client)
    client.once('close', () => this.sockets.delete(client))
    client.pause()
    const port = this.ports[this.next++ % this.ports.length]!
    const upstream = net.connect(port, '127.0.0.1')
    upstream.once('connect', () => {
      this.sockets.add(upstream)
      upstream.once('close', () => this.sockets.delete(upstream))
      client.pipe(upstream).pipe(client)
      client.resume()
      client.once('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
      client.once('close', () => upstream.destroy())
      upstream.once('close', () => client.destroy())
    })
    upstream.once('error', () => {
      if (upstream.readyState === 'opening' && tried + 1 < this.ports.length) {
        this.sockets.delete(client)
        this.route(client, tried + 1)
      } else client.destroy()
    })
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise((resolve) => this.server.close(resolve))
  }
}

export interface SubmitterFigures {
  accepted: Set<string>
  refused: number
  sent: number
}

/**
 * Submits `count` accepted jobs at `perSecond` through `/run`: a submission the platform does
 * not answer with a job id (it was down, or said 429) is not accepted, and another is sent in
 * its place.
 */
export async function submitSteadily(options: {
  url: () => string
  endpointId: string
  key: string
  count: number
  perSecond: number
  random: () => number
  /** Handlers sleep a random time up to this, ms. */
  maxJobMs: number
}): Promise<SubmitterFigures> {
  const figures: SubmitterFigures = { accepted: new Set(), refused: 0, sent: 0 }
  const inFlight = new Set<Promise<void>>()
  const intervalMs = 1000 / options.perSecond
  const startedAt = Date.now()
  let n = 0
  while (figures.accepted.size + inFlight.size < options.count) {
    const due = startedAt + n * intervalMs
    if (due > Date.now()) await sleep(due - Date.now())
    n += 1
    if (inFlight.size >= 64) {
      figures.refused += 1
      continue
    }
    const input = { n, ms: Math.floor(options.random() * options.maxJobMs) }
    figures.sent += 1
    const submission = (async () => {
      try {
        const response = await fetch(`${options.url()}/v2/${options.endpointId}/run`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${options.key}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ input }),
          signal: AbortSignal.timeout(10_000),
        })
        const body = (await response.json().catch(() => ({}))) as { id?: string }
        if (response.status === 200 && typeof body.id === 'string') figures.accepted.add(body.id)
        else figures.refused += 1
      } catch {
        figures.refused += 1
      }
    })()
    inFlight.add(submission)
    void submission.finally(() => inFlight.delete(submission))
  }
  await Promise.all(inFlight)
  return figures
}

/** Every record the handlers wrote under `dir`. */
export function readRunEvents(dir: string): RunEvent[] {
  const events: RunEvent[] = []
  for (const name of readdirSync(dir)) {
    if (!/^runs-\d+\.jsonl$/.test(name)) continue
    for (const line of readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      if (line.trim() !== '') events.push(JSON.parse(line) as RunEvent)
    }
  }
  return events
}

/** The pids of the processes with a job started and neither ended nor given up. */
export function busyPids(dir: string): number[] {
  const open = new Map<string, number>()
  for (const event of readRunEvents(dir).sort((a, b) => a.at - b.at)) {
    const key = `${event.pid}\u0000${event.jobId}`
    if (event.kind === 'start') open.set(key, event.pid)
    else open.delete(key)
  }
  return [...new Set(open.values())]
}

/**
 * The process groups the process driver runs under `dataDir` (the platform's workers): killed
 * when the suite ends, since workloads outlive their server by design. Only a group whose
 * leader is still the process that was started: a worker killed mid-run leaves its record, and
 * its number may since lead another group of this machine (pid numbers are given out again;
 * a CI run goes round the kernel's 32768 more than once). Signalling that number killed another
 * test's server.
 */
export function killWorkloadsOf(dataDir: string): void {
  const state = path.join(dataDir, 'runtime', 'process')
  if (!existsSync(state)) return
  for (const id of readdirSync(state)) {
    const file = path.join(state, id, 'state.json')
    if (!existsSync(file)) continue
    const { pgid, processStartTicks } = JSON.parse(readFileSync(file, 'utf8')) as {
      pgid?: number
      processStartTicks?: number | null
    }
    if (typeof pgid !== 'number' || typeof processStartTicks !== 'number') continue
    if (readProcStatSync(pgid)?.starttime !== processStartTicks) continue
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // Already gone.
    }
  }
}

/** Polls `check` until it holds or `timeoutMs` passes; resolves with whether it held. */
export async function waitUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 500,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check().catch(() => false)) return true
    if (Date.now() > deadline) return false
    await sleep(intervalMs)
  }
}
