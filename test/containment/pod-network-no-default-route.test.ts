import { execFileSync, spawnSync } from 'node:child_process'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findExecutable } from '../../src/runtime/process/bubblewrap.js'
import { repoRoot } from '../support/cli.js'

/**
 * A host on an isolated network, with no IPv4 default route: pasta found no interface to copy
 * a workload's address and routes from ("No external routable interface"), so every sandboxed
 * workload of another account was refused there. The host is played by a network namespace
 * with one interface and an address, and no default route; the driver's network probe runs
 * inside it, in a process of its own. docs/runtime.md, "Network".
 */
const tools = await Promise.all(
  ['pasta', 'ip', 'nsenter'].map((tool) => findExecutable(tool, process.env.PATH)),
)
const runnable = process.getuid?.() === 0 && tools.every((tool) => tool !== undefined)
if (!runnable) console.log('pod-network-no-default-route: left out: needs root, pasta, ip, nsenter')

const HOST_NS = `pyd-isolated-${process.pid}`
const BARE_NS = `pyd-bare-${process.pid}`
const LINK = `pyd-iso${process.pid % 100_000}`

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' })

/** The driver's probe of pod networks, run as a server in namespace `ns` would run it. */
function probeIn(ns: string): { ok: boolean; reason?: string } {
  const source = path.join(repoRoot, 'src', 'runtime', 'process', 'pod-network.ts')
  const script =
    `const { probePodNetwork } = await import(${JSON.stringify(source)});` +
    'console.log(JSON.stringify(await probePodNetwork(process.env.PATH)))'
  const child = spawnSync(
    'nsenter',
    [
      `--net=/run/netns/${ns}`,
      process.execPath,
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ],
    { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 },
  )
  if (child.status !== 0) throw new Error(`probe in ${ns}: ${child.stderr}`)
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as { ok: boolean; reason?: string }
}

describe.runIf(runnable)('pod networks on a host with no IPv4 default route', () => {
  beforeAll(() => {
    ip('netns', 'add', HOST_NS)
    ip('link', 'add', LINK, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', HOST_NS)
    ip('link', 'set', LINK, 'up')
    ip('-n', HOST_NS, 'addr', 'add', '10.251.0.2/24', 'dev', 'eth0')
    ip('-n', HOST_NS, 'link', 'set', 'eth0', 'up')
    ip('-n', HOST_NS, 'link', 'set', 'lo', 'up')
    ip('netns', 'add', BARE_NS)
    ip('-n', BARE_NS, 'link', 'set', 'lo', 'up')
  })

  afterAll(() => {
    for (const ns of [HOST_NS, BARE_NS]) spawnSync('ip', ['netns', 'delete', ns])
    spawnSync('ip', ['link', 'delete', LINK])
  })

  it('gives workloads namespaces of their own from the interface it has', () => {
    expect(ip('-n', HOST_NS, '-4', 'route', 'show', 'default').toString()).toBe('')
    expect(probeIn(HOST_NS)).toEqual(
      expect.objectContaining({ ok: true, network: expect.anything() }),
    )
  })

  it('says why it cannot where no interface has an IPv4 address', () => {
    expect(probeIn(BARE_NS)).toEqual({
      ok: false,
      reason:
        'this host has no IPv4 default route and no network interface with an IPv4 address ' +
        "to give workloads' namespaces theirs from (pasta needs one)",
    })
  })
})
