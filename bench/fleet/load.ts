/**
 * The fleet benchmark's measuring tools (bench/README.md): closed-loop HTTP load over the jobs
 * bench's raw client, a bare node:http anchor on a worker thread of this process, percentiles,
 * and what /proc says of the server process.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'
import { RawHttpConnection } from '../jobs/raw-http.js'

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]!
}

export const median = (values: number[]) => percentile(values, 50)

/** CPU seconds (user + system) the process has used so far (Linux /proc). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** A field of /proc/<pid>/status in MB (VmRSS: now; VmHWM: the peak so far). */
export function memoryMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(
    readFileSync(`/proc/${pid}/status`, 'utf8'),
  )
  return match ? Number(match[1]) / 1024 : Number.NaN
}

/** The 1-minute load average (other people's work on this shared machine shows here). */
export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
}

export interface LoadResult {
  /** Answered with the expected status. */
  requests: number
  perSecond: number
  latenciesMs: number[]
  /** Answered otherwise, or failed (the first few, for the report). */
  failures: number
  firstFailures: string[]
}

/**
 * `clients` keep-alive connections, each sending `next()`'s request as soon as the previous
 * answered, for `seconds`; every answer must have status `expect`.
 */
export async function closedLoop(
  url: string,
  clients: number,
  seconds: number,
  next: () => { method: string; path: string; body?: string },
  headers: Record<string, string>,
  expect = 200,
): Promise<LoadResult> {
  const connections = Array.from({ length: clients }, () => new RawHttpConnection(new URL(url)))
  const latenciesMs: number[] = []
  const firstFailures: string[] = []
  let requests = 0
  let failures = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  try {
    await Promise.all(
      connections.map(async (connection) => {
        while (performance.now() < deadline) {
          const { method, path, body = '' } = next()
          const before = performance.now()
          let failure: string | undefined
          try {
            const response = await connection.request(method, path, body, headers)
            if (response.status !== expect) {
              failure = `${method} ${path} answered ${response.status}: ${response.body.slice(0, 200)}`
            }
          } catch (error) {
            failure = `${method} ${path}: ${(error as Error).message}`
          }
          latenciesMs.push(performance.now() - before)
          if (failure === undefined) {
            requests += 1
            continue
          }
          failures += 1
          if (firstFailures.length < 3) firstFailures.push(failure)
          // A connection that failed is not used again.
          if (failure.includes(': ') && !failure.includes('answered')) return
        }
      }),
    )
  } finally {
    for (const connection of connections) connection.close()
  }
  const elapsed = (performance.now() - started) / 1000
  return { requests, perSecond: requests / elapsed, latenciesMs, failures, firstFailures }
}

/** One client, `count` requests one after the other: the latency of a request on its own. */
export async function sequential(
  url: string,
  count: number,
  next: () => { method: string; path: string; body?: string },
  headers: Record<string, string>,
): Promise<number[]> {
  const connection = new RawHttpConnection(new URL(url))
  const latencies: number[] = []
  try {
    for (let i = 0; i < count; i++) {
      const { method, path, body = '' } = next()
      const before = performance.now()
      const response = await connection.request(method, path, body, headers)
      latencies.push(performance.now() - before)
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}`)
    }
  } finally {
    connection.close()
  }
  return latencies
}

/**
 * The anchor: a bare node:http server on a worker thread of this process (its own event loop,
 * as the server under test has its own process), answering every request with `body`.
 */
export async function startBareHttp(body: string): Promise<{ url: string; stop(): Promise<void> }> {
  const source = `
    const http = require('node:http')
    const { parentPort, workerData } = require('node:worker_threads')
    const body = Buffer.from(workerData.body)
    const server = http.createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
        response.end(body)
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
  `
  const worker = new Worker(source, { eval: true, workerData: { body } })
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  return { url: `http://127.0.0.1:${port}`, stop: async () => void (await worker.terminate()) }
}

/**
 * The second anchor: Fastify reading the pod's document by primary key from SQLite (in memory)
 * on a worker thread of this process: the framework and the store the server is built on,
 * without anything of the platform (authentication, quotas, metrics, the pod's view).
 */
export async function startFastifySqlite(
  ids: readonly string[],
  body: string,
): Promise<{ url: string; stop(): Promise<void> }> {
  const require = createRequire(import.meta.url)
  const source = `
    const { parentPort, workerData } = require('node:worker_threads')
    const Fastify = require(workerData.fastify)
    const Database = require(workerData.sqlite)
    const db = new Database(':memory:')
    db.exec('create table pods (id text primary key, doc text not null)')
    const insert = db.prepare('insert into pods (id, doc) values (?, ?)')
    for (const id of workerData.ids) insert.run(id, workerData.body)
    const byId = db.prepare('select doc from pods where id = ?')
    const app = Fastify({ logger: false })
    app.get('/v2/pods/:id', (request, reply) => {
      const row = byId.get(request.params.id)
      if (!row) return reply.code(404).send({ status: 404 })
      reply.type('application/json').send(row.doc)
    })
    app.listen({ port: 0, host: '127.0.0.1' }).then(() => parentPort.postMessage(app.server.address().port))
  `
  const worker = new Worker(source, {
    eval: true,
    workerData: {
      ids,
      body,
      fastify: require.resolve('fastify'),
      sqlite: require.resolve('better-sqlite3'),
    },
  })
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  return { url: `http://127.0.0.1:${port}`, stop: async () => void (await worker.terminate()) }
}
