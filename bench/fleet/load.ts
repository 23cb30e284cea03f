/**
 * The fleet benchmark's measuring tools (bench/README.md): closed-loop HTTP load over the jobs
 * bench's raw client, the anchors (bare node:http, Fastify + SQLite, mercurius), each in a
 * process of its own, percentiles, and what /proc says of the server process.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
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

export interface Anchor {
  url: string
  /** Its process, whose CPU /proc tells (`cpuSeconds`). */
  pid: number
  stop(): Promise<void>
}

/**
 * Runs `source` (CommonJS, given `data` as the global `anchorData`) as a child process of its
 * own, as the server under test is, so that its CPU per request can be read from /proc beside
 * the server's; it prints the port it listens on as its first line.
 */
async function startAnchorProcess(source: string, data: unknown): Promise<Anchor> {
  const child = spawn(
    process.execPath,
    ['-e', `const anchorData = ${JSON.stringify(data)};\n${source}`],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const port = await new Promise<number>((resolve, reject) => {
    let text = ''
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      const line = text.split('\n')[0]
      if (text.includes('\n') && line) resolve(Number(line))
    })
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`anchor exited with ${code}`)))
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
    },
  }
}

/** The anchor: a bare node:http server in a process of its own answering every request with `body`. */
export async function startBareHttp(body: string): Promise<Anchor> {
  const source = `
    const http = require('node:http')
    const body = Buffer.from(anchorData.body)
    const server = http.createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
        response.end(body)
      })
    })
    server.keepAliveTimeout = 60_000
    server.listen(0, '127.0.0.1', () => console.log(server.address().port))
  `
  return startAnchorProcess(source, { body })
}

/**
 * The second anchor: Fastify reading the pod's document by primary key from SQLite (in memory)
 * in a process of its own: the framework and the store the server is built on, without
 * anything of the platform (authentication, quotas, metrics, the pod's view).
 */
export async function startFastifySqlite(ids: readonly string[], body: string): Promise<Anchor> {
  const require = createRequire(import.meta.url)
  const source = `
    const Fastify = require(anchorData.fastify)
    const Database = require(anchorData.sqlite)
    const db = new Database(':memory:')
    db.exec('create table pods (id text primary key, doc text not null)')
    const insert = db.prepare('insert into pods (id, doc) values (?, ?)')
    for (const id of anchorData.ids) insert.run(id, anchorData.body)
    const byId = db.prepare('select doc from pods where id = ?')
    const app = Fastify({ logger: false })
    app.get('/v2/pods/:id', (request, reply) => {
      const row = byId.get(request.params.id)
      if (!row) return reply.code(404).send({ status: 404 })
      reply.type('application/json').send(row.doc)
    })
    app.listen({ port: 0, host: '127.0.0.1' }).then(() => console.log(app.server.address().port))
  `
  return startAnchorProcess(source, {
    ids,
    body,
    fastify: require.resolve('fastify'),
    sqlite: require.resolve('better-sqlite3'),
  })
}

/**
 * The GraphQL anchor: mercurius on Fastify (what podyard's `/graphql` is built on) in a process
 * of its own, with a schema of one field, answering `{ hello }` and nothing else.
 */
export async function startMercuriusHello(): Promise<Anchor> {
  const require = createRequire(import.meta.url)
  const source = `
    const Fastify = require(anchorData.fastify)
    const mercurius = require(anchorData.mercurius)
    const app = Fastify({ logger: false })
    app.register(mercurius, {
      schema: 'type Query { hello: String }',
      resolvers: { Query: { hello: async () => 'world' } },
    })
    app.listen({ port: 0, host: '127.0.0.1' }).then(() => console.log(app.server.address().port))
  `
  return startAnchorProcess(source, {
    fastify: require.resolve('fastify'),
    mercurius: require.resolve('mercurius'),
  })
}
