/**
 * What containment costs (bench/README.md, "bench/containment"). The process driver's
 * workloads of a second, non-admin account, under three settings of the server:
 *
 * - `isolated`: `sandbox: auto` (bubblewrap) and `podNetwork: isolated` (the default: a network
 *   namespace of its own with pasta, docs/runtime.md "Network");
 * - `host`: the same sandbox in the host's network (`podNetwork: host`);
 * - `none`: no sandbox at all (`sandbox: none`), for reference.
 *
 * and, asked for with `--settings=docker,docker-plain` (a Docker engine and the test images):
 *
 * - `docker`: the docker driver (`driver: docker`): the container's limits (memory, CPU quota,
 *   processes), the account's own bridge and the host firewall (disk accepted unenforced where
 *   the engine cannot size it);
 * - `docker-plain`: the same image and program by `docker run -p` without the platform, no
 *   limits, Docker's default bridge: the docker rows' reference; its "create -> RUNNING" is
 *   `docker run` until the pod's port answers.
 *
 * For each: create -> RUNNING p50/p95 of `--pods` pods, one after the other, each with one
 * declared http port served at once by a small Node server in the pod; then, through one pod,
 * `--mib` MiB over one TCP stream from the pod's published port to the bench on the host
 * ("loopback"), and from the pod to a listener the bench runs in a network namespace it makes
 * on this machine ("outbound": a veth pair, 10.250.77.1/30 on the host's side; the host's own
 * addresses are unreachable from an isolated pod by design, so the listener is at .2).
 * Everything stays on this machine; the namespace, the pods and the servers are removed at the
 * end. Needs root, `ip`, bwrap and pasta (the process driver's isolation).
 *
 * Options: --pods=20 --mib=1024 --settings=isolated,host,none --keep
 */
import { spawn, spawnSync } from 'node:child_process'
import { connect } from 'node:net'
import { cpus } from 'node:os'
import { performance } from 'node:perf_hooks'
import { BENCH_ADMIN_KEY, startBenchServer } from '../bench-server.js'
import { loadAverage, percentile, sleep } from '../fleet/load.js'

const ADMIN_KEY = BENCH_ADMIN_KEY

function option(name: string, fallback: string): string {
  const prefix = `--${name}=`
  const found = process.argv.find((arg) => arg.startsWith(prefix))
  return found ? found.slice(prefix.length) : fallback
}

const settings = {
  pods: Number(option('pods', '20')),
  mib: Number(option('mib', '1024')),
  settings: option('settings', 'isolated,host,none').split(','),
  keep: process.argv.includes('--keep'),
}

const SETTINGS: Record<string, Record<string, string>> = {
  isolated: { PODYARD_SANDBOX: 'auto', PODYARD_POD_NETWORK: 'isolated' },
  host: { PODYARD_SANDBOX: 'auto', PODYARD_POD_NETWORK: 'host' },
  none: { PODYARD_SANDBOX: 'none', PODYARD_POD_NETWORK: 'isolated' },
  docker: {
    PODYARD_DRIVER: 'docker',
    PODYARD_FLEET: 'none',
    PODYARD_CONTAINMENT_ACCEPT_UNENFORCED: 'disk',
  },
}
/** Measured without a server (measureDockerPlain). */
const DOCKER_PLAIN = 'docker-plain'
/** The docker settings' image: node and a shell (test/support/docker-test-images.sh). */
const DOCKER_IMAGE = 'podyard-conformance/plain:1'

/** The outbound listener's namespace and addresses (private, on this machine only). */
const OUT_NS = 'podyard-bench-out'
const OUT_HOST_SIDE = 'pybench0'
const OUT_NS_SIDE = 'pybench1'
const OUT_ADDRESS = '10.250.77.2'
const OUT_PORT = 9199

/** Every wait of the bench is bounded. */
const RUNNING_TIMEOUT_MS = 60_000
const TRANSFER_TIMEOUT_MS = 300_000

/**
 * The pod's program (in its env, so no file has to be visible in its sandbox): an HTTP server on
 * its declared port; `GET /down?bytes=N` streams N bytes; `GET /out?host=H&port=P&bytes=N`
 * sends N bytes over one TCP connection to H:P and answers the milliseconds from connect until
 * the listener closed after counting them.
 */
const POD_PROGRAM = `
const http = require('node:http'), net = require('node:net')
const chunk = Buffer.alloc(1 << 20)
function send(stream, bytes, done) {
  let left = bytes
  const more = () => {
    while (left > 0) {
      const n = Math.min(left, chunk.length)
      left -= n
      if (!stream.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return stream.once('drain', more)
    }
    done()
  }
  more()
}
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://pod')
  const bytes = Number(url.searchParams.get('bytes') || 0)
  if (url.pathname === '/down') {
    res.writeHead(200, { 'content-length': bytes })
    return send(res, bytes, () => res.end())
  }
  if (url.pathname === '/out') {
    const started = performance.now()
    const socket = net.connect(Number(url.searchParams.get('port')), url.searchParams.get('host'))
    socket.on('error', (e) => { res.writeHead(502); res.end(String(e)) })
    socket.on('connect', () => send(socket, bytes, () => socket.end()))
    socket.on('close', (failed) => { if (!failed) res.end(String(performance.now() - started)) })
    return
  }
  res.end('ok')
}).listen(Number(process.env.RUNPOD_TCP_PORT_8888))
`

/** The outbound listener: counts what each connection sends, closes when the sender ends. */
const LISTENER_PROGRAM = `
require('node:net').createServer((s) => { let n = 0; s.on('data', (d) => { n += d.length }); s.on('end', () => s.end()) })
  .listen(${OUT_PORT}, '${OUT_ADDRESS}', () => console.log('listening'))
`

const fmt = (n: number, digits = 0) => n.toFixed(digits)

function ip(...args: string[]): void {
  const run = spawnSync('ip', args, { encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`ip ${args.join(' ')}: ${run.stderr.trim()}`)
}

/** The namespace of the outbound listener, its veth pair and the listener in it. */
async function startOutboundListener(): Promise<{ stop(): Promise<void> }> {
  removeOutboundNamespace()
  ip('netns', 'add', OUT_NS)
  ip('link', 'add', OUT_HOST_SIDE, 'type', 'veth', 'peer', 'name', OUT_NS_SIDE)
  ip('link', 'set', OUT_NS_SIDE, 'netns', OUT_NS)
  ip('addr', 'add', '10.250.77.1/30', 'dev', OUT_HOST_SIDE)
  ip('link', 'set', OUT_HOST_SIDE, 'up')
  ip('-n', OUT_NS, 'addr', 'add', `${OUT_ADDRESS}/30`, 'dev', OUT_NS_SIDE)
  ip('-n', OUT_NS, 'link', 'set', OUT_NS_SIDE, 'up')
  ip('-n', OUT_NS, 'link', 'set', 'lo', 'up')
  const child = spawn('ip', ['netns', 'exec', OUT_NS, process.execPath, '-e', LISTENER_PROGRAM], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('outbound listener not up in 10 s')), 10_000)
    child.stdout.once('data', () => {
      clearTimeout(timer)
      resolve()
    })
    child.once('exit', (code) => reject(new Error(`outbound listener exited (${code})`)))
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    stop: async () => {
      child.kill('SIGTERM')
      await exited
      removeOutboundNamespace()
    },
  }
}

function removeOutboundNamespace(): void {
  // Removing the namespace removes its end of the pair, and with it the host's end.
  spawnSync('ip', ['link', 'del', OUT_HOST_SIDE], { stdio: 'ignore' })
  spawnSync('ip', ['netns', 'del', OUT_NS], { stdio: 'ignore' })
}

interface Server {
  url: string
  banner: () => string
  stop(): Promise<void>
}

async function startServer(name: string, env: Record<string, string>): Promise<Server> {
  const server = await startBenchServer({
    name: `containment-${name}`,
    env: () => env,
    keep: settings.keep,
  })
  return {
    url: server.url,
    banner: () =>
      spawnSync('grep', ['-i', 'isolation\\|sandbox\\|network', server.logFile]).stdout + '',
    stop: server.stop,
  }
}

async function call(server: Server, key: string, method: string, route: string, body?: unknown) {
  const response = await fetch(`${server.url}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: response.status, json: (text ? JSON.parse(text) : null) as any }
}

/** A second account (role user) and its key, made by the admin over REST. */
async function memberKey(server: Server): Promise<string> {
  const created = await call(server, ADMIN_KEY, 'POST', '/v2/admin/accounts', {
    email: 'bench-member@example.com',
  })
  if (created.status !== 201) throw new Error(`account: ${created.status} ${created.json}`)
  return created.json.apiKey.key as string
}

const podBody = (i: number, image: string) => ({
  name: `contained-${i}`,
  image,
  disk: 1,
  ports: ['8888/http'],
  env: { BENCH_PROGRAM: POD_PROGRAM },
  args: 'exec node -e "$BENCH_PROGRAM"',
  cpu: { id: 'cpu3c', vcpuCount: 2 },
})

/** Terminates pod `id` and waits (60 s at most) until it is gone. */
async function terminate(server: Server, key: string, id: string): Promise<void> {
  await call(server, key, 'DELETE', `/v2/pods/${id}`)
  const deadline = performance.now() + 60_000
  while (performance.now() < deadline) {
    const { status, json } = await call(server, key, 'GET', `/v2/pods/${id}`)
    if (status === 404 || json?.status === 'TERMINATED') return
    await sleep(50)
  }
}

/**
 * Create -> first GET that says RUNNING, one pod at a time, polling every 5 ms; `one`: each pod
 * but the last is terminated before the next (a host with room for one pod). Every pod created
 * is in `ids`, also when it failed.
 */
async function timeToRunning(
  server: Server,
  key: string,
  count: number,
  options: { image: string; one: boolean; ids: string[] },
) {
  const { image, one, ids } = options
  const times: number[] = []
  const pods: { id: string; port: number }[] = []
  for (let i = 0; i < count; i++) {
    const started = performance.now()
    const created = await call(server, key, 'POST', '/v2/pods', podBody(i, image))
    if (created.status !== 201) {
      throw new Error(`create answered ${created.status}: ${JSON.stringify(created.json)}`)
    }
    const id = created.json.id as string
    ids.push(id)
    for (;;) {
      const { json } = await call(server, key, 'GET', `/v2/pods/${id}`)
      if (json.status === 'RUNNING') {
        const ports = (json.runtime?.ports ?? []) as { private: number; public: number }[]
        pods.push({ id, port: Number(ports.find((p) => p.private === 8888)?.public) })
        break
      }
      if (json.status === 'ERROR' || json.status === 'EXITED') {
        throw new Error(`pod ${id} went ${json.status}: ${JSON.stringify(json)}`)
      }
      if (performance.now() - started > RUNNING_TIMEOUT_MS) {
        throw new Error(`pod ${id} not RUNNING in ${RUNNING_TIMEOUT_MS} ms`)
      }
      await sleep(5)
    }
    times.push(performance.now() - started)
    if (one && i < count - 1) await terminate(server, key, pods.pop()!.id)
  }
  return { times, pods }
}

/** `--mib` MiB from the pod's published port to here, over one TCP connection. */
function loopbackDownload(port: number, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const timer = setTimeout(
      () => socket.destroy(new Error('download timed out')),
      TRANSFER_TIMEOUT_MS,
    )
    let started = 0
    let received = 0
    socket.on('connect', () => {
      started = performance.now()
      socket.write(`GET /down?bytes=${bytes} HTTP/1.1\r\nhost: pod\r\nconnection: close\r\n\r\n`)
    })
    socket.on('data', (data) => {
      received += data.length
    })
    socket.on('error', reject)
    socket.on('close', () => {
      clearTimeout(timer)
      // The response's headers are a few dozen bytes on top of the body.
      if (received < bytes) reject(new Error(`download: ${received} of ${bytes} bytes`))
      else resolve(performance.now() - started)
    })
  })
}

async function outboundUpload(port: number, bytes: number): Promise<number> {
  const response = await fetch(
    `http://127.0.0.1:${port}/out?host=${OUT_ADDRESS}&port=${OUT_PORT}&bytes=${bytes}`,
    { signal: AbortSignal.timeout(TRANSFER_TIMEOUT_MS) },
  )
  const text = await response.text()
  if (response.status !== 200) throw new Error(`outbound: ${response.status} ${text}`)
  return Number(text)
}

/** Loopback and outbound through the pod whose program answers on host port `port`. */
async function transfers(name: string, times: number[], port: number): Promise<Figures> {
  const bytes = settings.mib * 1024 * 1024
  if (!Number.isFinite(port)) throw new Error(`no published port for 8888`)
  // A transfer that fails is reported as such (NaN in the table) and the bench goes on.
  const attempt = async (what: string, transfer: () => Promise<number>) => {
    try {
      return await transfer()
    } catch (error) {
      console.log(`  ${name}: ${what} failed: ${(error as Error).message}`)
      return Number.NaN
    }
  }
  const loopbackMs = await attempt('loopback', () => loopbackDownload(port, bytes))
  const outboundMs = await attempt('outbound', () => outboundUpload(port, bytes))
  const figures = {
    name,
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    loopback: settings.mib / (loopbackMs / 1000),
    outbound: settings.mib / (outboundMs / 1000),
  }
  console.log(
    `  ${name}: create -> RUNNING p50 ${fmt(figures.p50)} ms, p95 ${fmt(figures.p95)} ms (${times.length} pods); loopback ${fmt(figures.loopback)} MiB/s, outbound ${fmt(figures.outbound)} MiB/s (${settings.mib} MiB, one stream)`,
  )
  return figures
}

function docker(...args: string[]): string {
  const run = spawnSync('docker', args, { encoding: 'utf8' })
  if (run.status !== 0) throw new Error(`docker ${args.join(' ')}: ${run.stderr.trim()}`)
  return run.stdout.trim()
}

/**
 * The docker rows' reference: the pod's image and program by `docker run` (no limits, the
 * default bridge, its port published on 127.0.0.1), from the run until the port answers.
 */
async function measureDockerPlain(): Promise<Figures> {
  const names: string[] = []
  try {
    const times: number[] = []
    let firstPort = Number.NaN
    for (let i = 0; i < settings.pods; i++) {
      const started = performance.now()
      const name = `podyard-bench-plain-${process.pid}-${i}`
      names.push(name)
      docker(
        ...['run', '-d', '--name', name, '-p', '127.0.0.1::8888'],
        ...['-e', `BENCH_PROGRAM=${POD_PROGRAM}`, '-e', 'RUNPOD_TCP_PORT_8888=8888'],
        ...[DOCKER_IMAGE, 'sh', '-c', 'exec node -e "$BENCH_PROGRAM"'],
      )
      const port = Number(docker('port', name, '8888/tcp').split('\n')[0]!.split(':').at(-1))
      for (;;) {
        const answered = await fetch(`http://127.0.0.1:${port}/`)
          .then((r) => r.text())
          .catch(() => '')
        if (answered === 'ok') break
        if (performance.now() - started > RUNNING_TIMEOUT_MS) {
          throw new Error(`${name} did not answer in ${RUNNING_TIMEOUT_MS} ms`)
        }
        await sleep(5)
      }
      times.push(performance.now() - started)
      if (i === 0) firstPort = port
    }
    return await transfers(DOCKER_PLAIN, times, firstPort)
  } finally {
    if (names.length > 0) spawnSync('docker', ['rm', '-f', ...names], { stdio: 'ignore' })
  }
}

interface Figures {
  name: string
  p50: number
  p95: number
  loopback: number
  outbound: number
}

async function measure(name: string): Promise<Figures> {
  const server = await startServer(name, SETTINGS[name]!)
  const key = await memberKey(server)
  const ids: string[] = []
  try {
    const image = name === 'docker' ? DOCKER_IMAGE : 'runpod/base:0.6.2'
    // The docker setting's host is this machine alone (fleet none): room for one pod.
    const one = name === 'docker'
    const { times, pods } = await timeToRunning(server, key, settings.pods, { image, one, ids })
    return await transfers(name, times, pods[0]!.port)
  } finally {
    for (const id of ids) await call(server, key, 'DELETE', `/v2/pods/${id}`)
    // A pod outlives its server: wait until each is gone before the server stops.
    const deadline = performance.now() + 60_000
    for (const id of ids) {
      while (performance.now() < deadline) {
        const { status, json } = await call(server, key, 'GET', `/v2/pods/${id}`)
        if (status === 404 || json?.status === 'TERMINATED') break
        await sleep(50)
      }
    }
    await server.stop()
  }
}

console.log(
  `bench/containment on ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}; load average at start ${loadAverage()}`,
)
if (process.getuid?.() !== 0) {
  console.log('not measured: the process driver isolates workloads only when run as root')
  process.exit(0)
}
const listener = await startOutboundListener()
const results: Figures[] = []
try {
  for (const name of settings.settings) {
    if (name === DOCKER_PLAIN) {
      results.push(await measureDockerPlain())
      continue
    }
    if (!SETTINGS[name]) {
      throw new Error(`unknown setting ${name} (isolated, host, none, docker, docker-plain)`)
    }
    results.push(await measure(name))
  }
} finally {
  await listener.stop()
}

console.log(`\n| setting      | create -> RUNNING p50 / p95 | loopback MiB/s | outbound MiB/s |`)
console.log(`| ------------ | --------------------------- | -------------- | -------------- |`)
for (const r of results) {
  // The process driver's rows against no sandbox, the docker driver's against plain Docker.
  const anchorName = r.name.startsWith('docker') ? DOCKER_PLAIN : 'none'
  const base = r.name === anchorName ? undefined : results.find((a) => a.name === anchorName)
  const vs = (value: number, anchor: number | undefined) =>
    anchor === undefined ? '' : ` (${fmt(value / anchor, 2)}x ${anchorName})`
  console.log(
    `| ${r.name.padEnd(12)} | ${fmt(r.p50)} / ${fmt(r.p95)} ms${vs(r.p50, base?.p50)} | ${fmt(r.loopback)}${vs(r.loopback, base?.loopback)} | ${fmt(r.outbound)}${vs(r.outbound, base?.outbound)} |`,
  )
}
console.log(`load average at end ${loadAverage()}`)
