import { execFileSync } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../src/runtime/process/bubblewrap.js'
import { probePodNetwork } from '../src/runtime/process/pod-network.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../src/runtime/process/sandbox-users.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from './support/platform.js'
import { until } from './support/until.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

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

/** A listener that hands a secret to whoever connects. */
function secretServer(host: string, secret: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.end(`${secret}\n`))
    server.once('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 })
    })
  })
}

/** Node code run in the pod: tries each target, prints REACHED/REFUSED, then serves its port. */
function probeScript(targets: Record<string, [string, number]>): string {
  const code = [
    'const net = require("net")',
    `const targets = ${JSON.stringify(targets)}`,
    'const tryOne = ([name, [host, port]]) => new Promise((done) => {',
    '  const s = net.connect({ host, port, timeout: 3000 })',
    '  s.on("connect", () => { console.log("REACHED " + name); s.destroy(); done() })',
    '  s.on("timeout", () => { console.log("REFUSED " + name + " timeout"); s.destroy(); done() })',
    '  s.on("error", (e) => { console.log("REFUSED " + name + " " + e.code); done() })',
    '})',
    ';(async () => {',
    '  for (const entry of Object.entries(targets)) await tryOne(entry)',
    '  console.log("probe-done")',
    '})()',
    'require("http").createServer((q, r) => r.end("declared port answers")).listen(process.env.RUNPOD_TCP_PORT_8080)',
  ].join('\n')
  return `exec node -e '${code}'`
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

  const call = async (key: string, pathAndQuery: string, json?: unknown) => {
    const response = await platform.call(pathAndQuery, {
      key,
      ...(json === undefined ? {} : { method: 'POST', json }),
    })
    const text = await response.text()
    let body: Json = text
    try {
      body = JSON.parse(text)
    } catch {
      // logs: server-sent events
    }
    return { status: response.status, body }
  }

  const podLog = async (key: string, id: string): Promise<string[]> => {
    const read = await call(key, `/v2/pods/${id}/logs?follow=false&tail=200&source=container`)
    return String(read.body)
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => (JSON.parse(l.slice('data: '.length)) as { line: string }).line)
  }

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
})
