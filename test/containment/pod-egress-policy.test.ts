import type { ChildProcess } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { probePodNetwork } from '../../src/runtime/process/pod-network.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { podLog } from '../support/http.js'
import { PEER_PORT, peerNamespace, removePeer, startPeer } from '../support/peer-namespaces.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * The operator's egress policy (config `containment.egress`) on the process driver: a member's
 * sandboxed pod, in its own network namespace, connects to two listeners outside the host's
 * own addresses (network namespaces of the test's own, each joined to the host by a veth pair
 * on a private /30 of this machine). With `deny: [B]` it reaches A and not B; with
 * `allow: [A]` the same.
 */
const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})
const network = await probePodNetwork(process.env.PATH)
const runnable = bubblewrap.ok && network.ok
if (!runnable) {
  console.log(
    `pod-egress-policy: left out: ${bubblewrap.ok ? '' : bubblewrap.reason} ${network.ok ? '' : network.reason}`,
  )
}

const PEERS = { a: peerNamespace('a', 252), b: peerNamespace('b', 253) }
const address = (peer: keyof typeof PEERS) => PEERS[peer].address

/** Node code run in the pod: connects to both peers, printing REACHED/REFUSED for each. */
const PROBE = `exec node -e '${[
  'const net = require("net")',
  `const targets = ${JSON.stringify({ a: address('a'), b: address('b') })}`,
  'const tryOne = ([name, host]) => new Promise((done) => {',
  `  const s = net.connect({ host, port: ${PEER_PORT}, timeout: 3000 })`,
  '  s.on("data", (d) => { console.log("REACHED " + name + " " + String(d).trim()); s.destroy(); done() })',
  '  s.on("timeout", () => { console.log("REFUSED " + name + " timeout"); s.destroy(); done() })',
  '  s.on("error", (e) => { console.log("REFUSED " + name + " " + e.code); done() })',
  '})',
  ';(async () => { for (const t of Object.entries(targets)) await tryOne(t); console.log("probe-done") })()',
  'setInterval(() => {}, 1 << 30)',
].join('\n')}'`

describe.runIf(runnable)('the egress policy on the process driver (sandboxed pods)', () => {
  const peers: ChildProcess[] = []

  beforeAll(async () => {
    peers.push(await startPeer(PEERS.a), await startPeer(PEERS.b))
  }, 30_000)

  afterAll(() => {
    for (const child of peers) child.kill('SIGTERM')
    removePeer(PEERS.a)
    removePeer(PEERS.b)
  })

  /** A platform with `egress`, a member's probing pod on it, and what the pod printed. */
  const probeWith = async (egress: { allow?: string[]; deny?: string[] }) => {
    const platform: TestPlatform = await startTestPlatform({
      containment: { acceptUnenforced: [], egress: { allow: [], deny: [], ...egress } },
    })
    try {
      const member = await otherAccountKey(platform, 'egress@example.com')
      const call = (p: string, init?: Parameters<TestPlatform['call']>[1]) =>
        platform.call(p, { key: member, ...init })
      const created = await call('/v2/pods', {
        method: 'POST',
        json: { name: 'egress', image: 'ubuntu', cpu: { id: 'cpu3c', vcpuCount: 2 }, args: PROBE },
      })
      expect(created.status, await created.clone().text()).toBe(201)
      const { id } = (await created.json()) as { id: string }
      return await until(
        'the probe to finish',
        () => podLog(call, id),
        (lines) => lines.includes('probe-done'),
        60_000,
      )
    } finally {
      await platform.closeWithWorkloads()
    }
  }

  it('without a policy, reaches both (the default: outbound allowed)', async () => {
    const lines = await probeWith({})
    expect(lines).toContain('REACHED a peer-a')
    expect(lines).toContain('REACHED b peer-b')
  }, 120_000)

  it('reaches an address outside deny, never one inside it', async () => {
    const lines = await probeWith({ deny: [PEERS.b.cidr] })
    expect(lines).toContain('REACHED a peer-a')
    expect(
      lines.find((l) => l.startsWith('REFUSED b')),
      lines.join('\n'),
    ).toBeDefined()
    expect(lines.join('\n')).not.toContain('peer-b')
  }, 120_000)

  it('with allow, reaches only what it lists', async () => {
    const lines = await probeWith({ allow: [address('a')] })
    expect(lines).toContain('REACHED a peer-a')
    expect(
      lines.find((l) => l.startsWith('REFUSED b')),
      lines.join('\n'),
    ).toBeDefined()
    expect(lines.join('\n')).not.toContain('peer-b')
  }, 120_000)
})
