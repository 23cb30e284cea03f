import { execFileSync, spawn } from 'node:child_process'
import type { Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { probePodNetwork } from '../../src/runtime/process/pod-network.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { probeScript, secretServer } from '../support/hostile-workloads.js'
import { accountCaller, accountPodLog } from '../support/http.js'
import { until } from '../support/until.js'

/**
 * Before network namespaces a pod of the process driver shared the host's network. As another account, a pod
 * tries the platform's API on loopback, a PostgreSQL-like listener on loopback, another
 * tenant's pod on a port it did not declare, and the metadata address (added to this host's
 * loopback interface by the test: nothing leaves the machine); each must be unreachable, and its own declared
 * port must still answer from the host.
 */
const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})
const network = await probePodNetwork(process.env.PATH)
const runnable = bubblewrap.ok && network.ok
if (!runnable) {
  console.log(
    `pod-network-isolation: left out: ${bubblewrap.ok ? '' : bubblewrap.reason} ${network.ok ? '' : network.reason}`,
  )
}

const METADATA = '169.254.169.254'

/**
 * A listener outside the host's own addresses (which a pod may not reach): a network namespace
 * of the test's own, joined to the host by a veth pair, on a private /30 of this machine only.
 */
const PEER = {
  namespace: `pyt-bulk-${process.pid}`,
  hostSide: `pytb${process.pid % 100000}h`,
  peerSide: `pytb${process.pid % 100000}p`,
  subnet: `10.251.${process.pid % 250}`,
}
const BULK_MIB = 256
/** Each transfer's bound in the pod: a stream that stalls fails rather than holding the test. */
const BULK_TIMEOUT_MS = 20_000

/**
 * Serves `GET /bytes?n=N` (N zero bytes) and counts a `POST /count` body, answering its length.
 * It prints `listening` once it is up.
 */
const BULK_SERVER = `
const http = require('node:http')
const chunk = Buffer.alloc(1 << 20)
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://peer')
  if (url.pathname === '/bytes') {
    let left = Number(url.searchParams.get('n'))
    res.writeHead(200, { 'content-length': left })
    const more = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length)
        left -= n
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return res.once('drain', more)
      }
      res.end()
    }
    return more()
  }
  let count = 0
  req.on('data', (d) => { count += d.length })
  req.on('end', () => res.end(String(count)))
}).listen(8000, '${PEER.subnet}.2', () => console.log('listening'))
`

/** Run in the pod: downloads, then uploads, `BULK_MIB` MiB over one stream each, and says how it went. */
function bulkScript(host: string): string {
  const code = [
    'const http = require("http")',
    `const bytes = ${BULK_MIB} * 1024 * 1024`,
    'const report = (what, started, got, error) => console.log(`BULK ${what} ${error ? "failed " + error.code : "ok"} ${got} bytes ${Math.round(performance.now() - started)} ms`)',
    // Each transfer ends within the bound: a timer destroys it, and only the first outcome counts.
    'const transfer = (what, start) => new Promise((done) => {',
    '  const started = performance.now(); let finished = false',
    '  const end = (got, error) => { if (finished) return; finished = true; clearTimeout(timer); report(what, started, got, error); done() }',
    '  const req = start(end)',
    `  const timer = setTimeout(() => { const e = new Error("timeout"); e.code = "TIMEOUT"; req.destroy(e) }, ${BULK_TIMEOUT_MS})`,
    '})',
    `const down = () => transfer("down", (end) => { let got = 0`,
    `  const req = http.get({ host: "${host}", port: 8000, path: "/bytes?n=" + bytes }, (res) => {`,
    '    res.on("data", (d) => { got += d.length })',
    '    res.on("end", () => end(got))',
    '    res.on("error", (e) => end(got, e))',
    '  })',
    '  req.on("error", (e) => end(got, e))',
    '  return req',
    '})',
    'const up = () => transfer("up", (end) => { const chunk = Buffer.alloc(1 << 20); let left = bytes',
    `  const req = http.request({ host: "${host}", port: 8000, path: "/count", method: "POST", headers: { "content-length": bytes } }, (res) => {`,
    '    let body = ""; res.on("data", (d) => { body += d }); res.on("end", () => end(Number(body)))',
    '  })',
    '  req.on("error", (e) => end(bytes - left, e))',
    '  const more = () => { while (left > 0) { left -= chunk.length; if (!req.write(chunk)) return req.once("drain", more) } req.end() }',
    '  more()',
    '  return req',
    '})',
    ';(async () => { await down(); await up(); console.log("bulk-done") })()',
    'setInterval(() => {}, 1 << 30)',
  ].join('\n')
  return `exec node -e '${code}'`
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

function removePeer(): void {
  for (const args of [
    ['link', 'del', PEER.hostSide],
    ['netns', 'del', PEER.namespace],
  ]) {
    try {
      ip(...args)
    } catch {
      // not there
    }
  }
}

/** The peer's namespace and its server; resolves once the server listens. */
async function startPeer(): Promise<() => void> {
  removePeer()
  ip('netns', 'add', PEER.namespace)
  ip('link', 'add', PEER.hostSide, 'type', 'veth', 'peer', 'name', PEER.peerSide)
  ip('link', 'set', PEER.peerSide, 'netns', PEER.namespace)
  ip('addr', 'add', `${PEER.subnet}.1/30`, 'dev', PEER.hostSide)
  ip('link', 'set', PEER.hostSide, 'up')
  ip('-n', PEER.namespace, 'addr', 'add', `${PEER.subnet}.2/30`, 'dev', PEER.peerSide)
  ip('-n', PEER.namespace, 'link', 'set', PEER.peerSide, 'up')
  const child = spawn(
    'ip',
    ['netns', 'exec', PEER.namespace, process.execPath, '-e', BULK_SERVER],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  const stop = () => {
    child.kill('SIGTERM')
    removePeer()
  }
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the peer server is not up in 10 s')), 10_000)
      child.stdout.once('data', () => {
        clearTimeout(timer)
        resolve()
      })
      child.once('exit', (code) => reject(new Error(`the peer server exited (${code})`)))
    })
  } catch (error) {
    stop()
    throw error
  }
  return stop
}

describe.runIf(runnable)("a pod's network on the process driver (sandboxed)", () => {
  let platform: TestPlatform
  let attackerKey: string
  let victimKey: string
  const servers: Server[] = []
  let metadataAdded = false

  beforeAll(async () => {
    // On the loopback interface: this kernel may have no dummy devices.
    execFileSync('ip', ['addr', 'replace', `${METADATA}/32`, 'dev', 'lo'])
    metadataAdded = true
    platform = await startTestPlatform()
    attackerKey = await otherAccountKey(platform, 'attacker@example.com')
    victimKey = await otherAccountKey(platform, 'victim@example.com')
  }, 60_000)

  afterAll(async () => {
    if (metadataAdded) execFileSync('ip', ['addr', 'delete', `${METADATA}/32`, 'dev', 'lo'])
    for (const server of servers) server.close()
    await platform?.closeWithWorkloads()
  })

  const call = accountCaller(() => platform.url)
  const podLog = accountPodLog(() => platform.url)

  it("reaches none of the host's loopback services, other tenants' undeclared ports or the metadata address; its declared port answers", async () => {
    const postgres = await secretServer('127.0.0.1', 'SECRET-postgres')
    const metadata = await secretServer(METADATA, 'SECRET-metadata')
    servers.push(postgres.server, metadata.server)
    const undeclared = await secretServer('127.0.0.1', 'x')
    // A free port number for the victim's undeclared listener.
    const victimPort = undeclared.port
    await new Promise((resolve) => undeclared.server.close(resolve))

    const victim = await call(victimKey, '/v2/pods', {
      name: 'victim',
      image: 'ubuntu',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: `exec node -e 'require("net").createServer((s) => s.end("SECRET-victim")).listen(${victimPort}, "0.0.0.0")'`,
    })
    expect(victim.status, JSON.stringify(victim.body)).toBe(201)
    await until(
      'the victim pod to run',
      async () => (await call(victimKey, `/v2/pods/${victim.body.id}`)).body,
      (pod) => pod.status === 'RUNNING' || pod.status === 'ERROR' || pod.status === 'EXITED',
    )

    const apiPort = Number(new URL(platform.url).port)
    const created = await call(attackerKey, '/v2/pods', {
      name: 'prober',
      image: 'ubuntu',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      ports: ['8080/http'],
      args: probeScript({
        api: ['127.0.0.1', apiPort],
        postgres: ['127.0.0.1', postgres.port],
        'other-tenant': ['127.0.0.1', victimPort],
        metadata: [METADATA, metadata.port],
      }),
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.id as string
    const { pod, log } = await until(
      'the probe pod to try every target',
      async () => ({
        pod: (await call(attackerKey, `/v2/pods/${id}`)).body,
        log: await podLog(attackerKey, id),
      }),
      ({ pod, log }) =>
        pod.status === 'EXITED' ||
        pod.status === 'ERROR' ||
        (pod.status === 'RUNNING' && log.includes('probe-done')),
      20_000,
    )
    expect(pod.status, `${pod.statusReason} ${log.join('\n')}`).toBe('RUNNING')
    for (const name of ['api', 'postgres', 'other-tenant', 'metadata']) {
      expect(log.join('\n'), name).toMatch(new RegExp(`^REFUSED ${name} `, 'm'))
    }
    const publicPort = pod.runtime.ports[0].public as number
    const answer = await until(
      'its declared port to answer from the host',
      () =>
        fetch(`http://127.0.0.1:${publicPort}/`)
          .then((r) => r.text())
          .catch(() => ''),
      (text) => text !== '',
    )
    expect(answer).toBe('declared port answers')
  }, 60_000)

  // pasta's path for a pod's own connections out of its namespace reset long transfers
  // (ECONNRESET after some tens of MiB) and crawled at ~16 MiB/s.
  it(`moves ${BULK_MIB} MiB each way between an isolated pod and a server outside the host`, async () => {
    const stopPeer = await startPeer()
    try {
      const created = await call(attackerKey, '/v2/pods', {
        name: 'bulk',
        image: 'ubuntu',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args: bulkScript(`${PEER.subnet}.2`),
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const id = created.body.id as string
      const { pod, log } = await until(
        'the bulk pod to finish both transfers',
        async () => ({
          pod: (await call(attackerKey, `/v2/pods/${id}`)).body,
          log: await podLog(attackerKey, id),
        }),
        ({ pod, log }) =>
          pod.status === 'EXITED' ||
          pod.status === 'ERROR' ||
          (pod.status === 'RUNNING' && log.includes('bulk-done')),
        90_000,
      )
      const said = log.filter((l) => l.startsWith('BULK ')).join('\n')
      expect(pod.status, `${pod.statusReason} ${log.join('\n')}`).toBe('RUNNING')
      const bytes = BULK_MIB * 1024 * 1024
      expect(said).toMatch(new RegExp(`^BULK down ok ${bytes} bytes`, 'm'))
      expect(said).toMatch(new RegExp(`^BULK up ok ${bytes} bytes`, 'm'))
      console.log(`pod-network-isolation: ${said.replaceAll('\n', '; ')}`)
    } finally {
      stopPeer()
    }
  }, 120_000)
})
