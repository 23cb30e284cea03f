import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { networkInterfaces, tmpdir } from 'node:os'
import path from 'node:path'
import type { Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { probePodNetwork } from '../../src/runtime/process/pod-network.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { podDirectories } from '../../src/control/pod-workload.js'
import { pino } from 'pino'
import { startPlatform, type Platform } from '../../src/platform.js'
import {
  otherAccountKey,
  startTestPlatform,
  testConfig,
  type TestPlatform,
} from '../support/platform.js'
import { secretServer } from '../support/hostile-workloads.js'
import { accountCaller, accountPodLog } from '../support/http.js'
import { until } from '../support/until.js'

/**
 * globalNetworking on the process driver, through the API as two member accounts: A's
 * globally networked pods reach each other by `internalDns` name (on a port none declared),
 * and nothing else does: not A's pod without it, not B's globally networked pod, in either
 * direction; the host's loopback services stay out of reach.
 */
const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})
const network = await probePodNetwork(process.env.PATH)
const runnable = bubblewrap.ok && network.ok
if (!runnable) {
  console.log(
    `process-global-networking: left out: ${bubblewrap.ok ? '' : bubblewrap.reason} ${network.ok ? '' : network.reason}`,
  )
}

/** The port every pod listens on and declares to no one. */
const UNDECLARED = 9000
/** Where the driver keeps each global network's members and hosts file. */
const GLOBAL_STATE_DIR = '/run/podyard-global'

/**
 * Run in a pod: answers `hello from <its host name>` on UNDECLARED, prints `ADDR <address>` of
 * its global interface (`none` without one) after `SELF <addresses of its host name> LOCALHOST
 * <addresses of localhost>`, then waits (60 s at most) for /root/targets.json
 * (`name: [host, port]`, written by the test) and tries each: `REACHED <name> <answer>` or
 * `REFUSED <name> <code>` (3 s to connect), then `probe-done`.
 */
const POD_SCRIPT = [
  'const net = require("net"), fs = require("fs"), os = require("os")',
  `net.createServer((s) => s.end("hello from " + os.hostname())).listen(${UNDECLARED}, "0.0.0.0")`,
  'const mine = (os.networkInterfaces().global0 || []).find((a) => a.family === "IPv4")',
  'const lookup = (name) => new Promise((done) => require("dns").lookup(name, { all: true }, (e, all) =>',
  '  done(e ? e.code : all.map((a) => a.address).join(","))))',
  'Promise.all([lookup(os.hostname()), lookup("localhost")]).then(([self, local]) => {',
  '  console.log("SELF " + self + " LOCALHOST " + local)',
  '  console.log("ADDR " + (mine ? mine.address : "none"))',
  '})',
  'const tryOne = ([name, [host, port]]) => new Promise((done) => {',
  '  const s = net.connect({ host, port, timeout: 3000 }); let got = ""',
  '  s.on("data", (d) => { got += d })',
  '  s.on("end", () => { console.log("REACHED " + name + " " + got.trim()); done() })',
  '  s.on("timeout", () => { console.log("REFUSED " + name + " timeout"); s.destroy(); done() })',
  '  s.on("error", (e) => { console.log("REFUSED " + name + " " + e.code); done() })',
  '})',
  'let waited = 0',
  'const wait = async () => {',
  '  if (!fs.existsSync("/root/targets.json")) {',
  '    if (++waited > 600) return console.log("no-targets")',
  '    return setTimeout(wait, 100)',
  '  }',
  '  const targets = JSON.parse(fs.readFileSync("/root/targets.json", "utf8"))',
  '  for (const entry of Object.entries(targets)) await tryOne(entry)',
  '  console.log("probe-done")',
  '}',
  'wait()',
].join('\n')

describe.runIf(runnable)('globalNetworking on the process driver (sandboxed)', () => {
  let platform: TestPlatform
  let keyA: string
  let keyB: string
  const servers: Server[] = []
  /** The platform the helpers below talk to, and its data directory. */
  let site = { url: '', dataDir: '' }

  beforeAll(async () => {
    platform = await startTestPlatform()
    keyA = await otherAccountKey(platform, 'global-a@example.com')
    keyB = await otherAccountKey(platform, 'global-b@example.com')
    site = { url: platform.url, dataDir: platform.dataDir }
  }, 60_000)

  afterAll(async () => {
    for (const server of servers) server.close()
    await platform?.closeWithWorkloads()
  })

  const call = accountCaller(() => site.url)
  const podLog = accountPodLog(() => site.url)

  /** Creates an H100 pod (global networking needs an NVIDIA GPU) and waits for its address. */
  const createPod = async (key: string, name: string, globalNetworking: boolean) => {
    const created = await call(key, '/v2/pods', {
      name,
      image: 'ubuntu',
      gpu: { id: 'NVIDIA H100 80GB HBM3' },
      dataCenterIds: ['US-KS-2'],
      globalNetworking,
      args: `exec node -e '${POD_SCRIPT}'`,
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.id as string
    const { pod, log } = await until(
      `pod ${name} to run and say its address`,
      async () => ({
        pod: (await call(key, `/v2/pods/${id}`)).body,
        log: await podLog(key, id),
      }),
      ({ pod, log }) =>
        pod.status === 'EXITED' ||
        pod.status === 'ERROR' ||
        (pod.status === 'RUNNING' && log.some((l) => l.startsWith('ADDR '))),
      30_000,
    )
    expect(pod.status, `${pod.statusReason} ${log.join('\n')}`).toBe('RUNNING')
    const address = log.find((l) => l.startsWith('ADDR '))!.slice('ADDR '.length)
    return {
      key,
      id,
      address,
      resolved: log.find((l) => l.startsWith('SELF ')),
      dns: (pod.globalNetworking?.internalDns ?? `${id}.runpod.internal`) as string,
      globalIp: (pod.globalNetworking?.ip ?? null) as string | null,
    }
  }

  type Pod = Awaited<ReturnType<typeof createPod>>

  /** Gives the pod its targets and waits for what it got, by target name. */
  const probe = async (pod: Pod, targets: Record<string, [string, number]>) => {
    const disk = podDirectories(path.join(site.dataDir, '.podyard'), pod.id).containerDisk
    writeFileSync(path.join(disk, 'targets.json'), JSON.stringify(targets), { mode: 0o644 })
    const log = await until(
      `pod ${pod.id} to try its targets`,
      () => podLog(pod.key, pod.id),
      (log) => log.includes('probe-done') || log.includes('no-targets'),
      40_000,
    )
    const outcome: Record<string, string> = {}
    for (const line of log) {
      const match = /^(REACHED|REFUSED) (\S+) ?(.*)$/.exec(line)
      if (match) outcome[match[2]!] = `${match[1]} ${match[3]}`
    }
    return outcome
  }

  it("lets an account's globally networked pods reach each other by name, and nobody else", async () => {
    const loopback = await secretServer('127.0.0.1', 'SECRET-loopback')
    servers.push(loopback.server)
    site = { url: platform.url, dataDir: platform.dataDir }
    const apiPort = Number(new URL(platform.url).port)
    const hostAddress = Object.values(networkInterfaces())
      .flatMap((a) => a ?? [])
      .find((a) => a.family === 'IPv4' && !a.internal)?.address

    const a1 = await createPod(keyA, 'a1', true)
    const a2 = await createPod(keyA, 'a2', true)
    const a3 = await createPod(keyA, 'a3', false)
    const b1 = await createPod(keyB, 'b1', true)
    // Each global pod's address on the bridge is its globalNetworking.ip.
    for (const pod of [a1, a2, b1]) expect(pod.address).toBe(pod.globalIp)
    expect(a3.address).toBe('none')
    expect(new Set([a1.address, a2.address]).size).toBe(2)
    // A global pod's /etc/hosts keeps localhost and names the pod's own host name (its id).
    for (const pod of [a1, a2, b1]) {
      expect(pod.resolved).toMatch(new RegExp(`^SELF ${pod.address} LOCALHOST .*127\\.0\\.0\\.1`))
    }
    // Off the global network the host's hosts file is shown, with the pod's own name added.
    expect(a3.resolved).toMatch(/^SELF 127\.0\.1\.1 LOCALHOST .*127\.0\.0\.1/)

    const [fromA1, fromA2, fromA3, fromB1] = await Promise.all([
      probe(a1, {
        'a2-by-name': [a2.dns, UNDECLARED],
        'a2-by-address': [a2.address, UNDECLARED],
        'b1-by-name': [b1.dns, UNDECLARED],
        'b1-by-address': [b1.address, UNDECLARED],
        ...(hostAddress ? { 'a3-by-host-address': [hostAddress, UNDECLARED] } : {}),
        'host-loopback': ['127.0.0.1', loopback.port],
        api: ['127.0.0.1', apiPort],
      }),
      probe(a2, { 'a1-by-name': [a1.dns, UNDECLARED] }),
      probe(a3, {
        'a1-by-name': [a1.dns, UNDECLARED],
        'a1-by-address': [a1.address, UNDECLARED],
      }),
      probe(b1, {
        'a1-by-name': [a1.dns, UNDECLARED],
        'a1-by-address': [a1.address, UNDECLARED],
        'a2-by-address': [a2.address, UNDECLARED],
      }),
    ])

    expect(fromA1['a2-by-name']).toBe(`REACHED hello from ${a2.id}`)
    expect(fromA1['a2-by-address']).toBe(`REACHED hello from ${a2.id}`)
    expect(fromA2['a1-by-name']).toBe(`REACHED hello from ${a1.id}`)
    // Refused: no such name, or no way there (timeout, unreachable, refused).
    const refused = /^REFUSED /
    for (const [who, outcome] of Object.entries({
      'a1 to b1 by name': fromA1['b1-by-name'],
      'a1 to the host loopback': fromA1['host-loopback'],
      'a1 to the api': fromA1.api,
      'a3 to a1 by name': fromA3['a1-by-name'],
      'a3 to a1 by address': fromA3['a1-by-address'],
      'b1 to a1 by name': fromB1['a1-by-name'],
    })) {
      expect(outcome, who).toMatch(refused)
    }
    // Each account's pods are numbered from 10.0.0.2 in its own network: B1's address may be
    // A1's own (then A1 reaches itself), but it never leads to the other account's pod.
    const notFrom = (pod: Pod) => new RegExp(`^(REFUSED |REACHED hello from (?!${pod.id}))`)
    expect(fromA1['b1-by-address'], 'a1 to b1 by address').toMatch(notFrom(b1))
    expect(fromB1['a1-by-address'], 'b1 to a1 by address').toMatch(notFrom(a1))
    expect(fromB1['a2-by-address'], 'b1 to a2 by address').toMatch(notFrom(a2))
    // The host's address is also the pod's own in its namespace (pasta copies it): what
    // answers there is the pod itself, never A3.
    if (hostAddress) {
      expect(fromA1['a3-by-host-address']).not.toBe(`REACHED hello from ${a3.id}`)
    }

    // A pod that goes leaves the network: its name leaves the members' hosts file.
    const hostsFileOfA = () =>
      readdirSync(GLOBAL_STATE_DIR)
        .filter((f) => f.endsWith('.d'))
        .map((f) => readFileSync(path.join(GLOBAL_STATE_DIR, f, 'hosts'), 'utf8'))
        .find((text) => text.includes(a1.dns))
    expect(hostsFileOfA()).toContain(a2.dns)
    expect(hostsFileOfA()).not.toContain(b1.dns)
    const stopped = await call(keyA, `/v2/pods/${a2.id}/action`, { action: 'stop' })
    expect(stopped.status, JSON.stringify(stopped.body)).toBeLessThan(300)
    await until(
      'a2 to stop',
      async () => (await call(keyA, `/v2/pods/${a2.id}`)).body.status as string,
      (status) => status === 'EXITED',
    )
    const after = await until(
      "a2's name to leave the hosts file",
      async () => hostsFileOfA() ?? '',
      (text) => !text.includes(a2.dns),
      15_000,
    )
    expect(after).toContain(a1.dns)
  }, 180_000)

  it('keeps a pod that outlived a server restart on its network, for pods created after', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-global-restart-'))
    const start = () => startPlatform(testConfig(dataDir), { logger: pino({ level: 'silent' }) })
    let first: Platform | undefined
    let second: Platform | undefined
    try {
      first = await start()
      site = { url: first.url, dataDir }
      const key = await otherAccountKey(first, 'global-restart@example.com')
      const r1 = await createPod(key, 'r1', true)
      // The server goes; its workloads stay (they are adopted by the next one).
      await first.close()
      first = undefined
      second = await start()
      site = { url: second.url, dataDir }
      const r2 = await createPod(key, 'r2', true)
      expect(r2.address).not.toBe(r1.address)
      const [fromR1, fromR2] = await Promise.all([
        probe(r1, { 'r2-by-name': [r2.dns, UNDECLARED] }),
        probe(r2, { 'r1-by-name': [r1.dns, UNDECLARED] }),
      ])
      expect(fromR1['r2-by-name']).toBe(`REACHED hello from ${r2.id}`)
      expect(fromR2['r1-by-name']).toBe(`REACHED hello from ${r1.id}`)
    } finally {
      await first?.closeWithWorkloads()
      await second?.closeWithWorkloads()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 180_000)
})
