import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { access, readFile, writeFile } from 'node:fs/promises'
import type { WorkloadNetwork } from '../driver.js'
import { findExecutable } from './bubblewrap.js'
import { GlobalNetworkFiles } from './global-network-files.js'
import { sandboxHostnameOf } from './workload-launch.js'

/**
 * The private network of an account's globally networked pods on the process driver
 * (docs/runtime.md, "globalNetworking"). Each network name (one per account) gets a Linux
 * bridge in the host's namespace with no address on the host's side (IPv6 off there too): the
 * host neither routes nor answers on it, so a member reaches the other members of its bridge and
 * nothing else through it. Each member's namespace gets a veth pair into the bridge, with an
 * address: the pod's own `globalNetworking.ip`. Bridges of different accounts share no link, so the same
 * subnet on each is harmless. Names resolve through a hosts file per network, in a directory
 * bound read-only into the members' sandboxes with /etc/hosts linked to it, replaced whole as
 * members come and go (global-network-files.ts). pasta still carries the member's egress and
 * published ports.
 */

/**
 * The members' network: 10.0.0.0/8, where the pods' `globalNetworking.ip` are (unique within an
 * account); every account's bridge uses it (they never meet).
 */
export const MEMBER_PREFIX_BITS = 8
/** Where a member without an address of its own gets one (unused by the pods' addresses). */
export const GLOBAL_NETWORK_SUBNET = { prefix: [10, 217], bits: 16 } as const
/** The interface a member sees for its global network. */
export const MEMBER_INTERFACE = 'global0'
const COMMAND_TIMEOUT_MS = 10_000
const HOST_COUNT = 2 ** (32 - GLOBAL_NETWORK_SUBNET.bits) - 2

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: COMMAND_TIMEOUT_MS }, (error, stdout, stderr) => {
      if (error)
        reject(new Error(`${[file, ...args].join(' ')}: ${stderr.trim() || error.message}`))
      else resolve(stdout)
    })
  })
}

function shortHash(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 12)
}

/** The bridge of a network (15 characters at most, the kernel's limit). */
export function bridgeName(stateDir: string, network: string): string {
  return `pyg${shortHash(stateDir, network)}`
}

/** The host side of a workload's veth pair. */
export function hostVethName(stateDir: string, workloadId: string): string {
  return `pyv${shortHash(stateDir, workloadId)}`
}

/** The address of offset `n` (1..HOST_COUNT) in the subnet. */
function addressAt(n: number): string {
  const [a, b] = GLOBAL_NETWORK_SUBNET.prefix
  return `${a}.${b}.${Math.floor(n / 256)}.${n % 256}`
}

/**
 * A member's address: the one its id hashes to, so that a restarted pod gets the same one, or
 * the next free one after it.
 */
export function chooseAddress(workloadId: string, taken: ReadonlySet<string>): string {
  const start = Number.parseInt(shortHash(workloadId).slice(0, 8), 16) % HOST_COUNT
  for (let i = 0; i < HOST_COUNT; i++) {
    const address = addressAt(((start + i) % HOST_COUNT) + 1)
    if (!taken.has(address)) return address
  }
  throw new Error('the global network has no free address left')
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  )
}

async function disableIpv6(device: string): Promise<void> {
  // The host side must get no link-local address: members would reach the host through it.
  const file = `/proc/sys/net/ipv6/conf/${device}/disable_ipv6`
  if (await exists(file)) await writeFile(file, '1')
}

/**
 * Where br_netfilter is loaded with bridge-nf-call-iptables on (Docker loads it), frames
 * bridged between two members go through iptables' FORWARD chain, whose policy Docker sets
 * to DROP; the bridge's own nf_call_iptables 0 cannot turn the host-wide setting off. The
 * rule accepts what stays on this bridge (the host has no address there, so nothing is routed
 * off it). It needs `iptables` on PATH; without br_netfilter nothing is needed.
 */
async function bridgeForwardRule(
  bridge: string,
  action: '-I' | '-D',
  searchPath: string | undefined,
): Promise<void> {
  const setting = await readFile('/proc/sys/net/bridge/bridge-nf-call-iptables', 'utf8').catch(
    () => '0',
  )
  if (action === '-I' && setting.trim() !== '1') return
  const iptables = await findExecutable('iptables', searchPath)
  if (iptables === undefined) {
    if (action === '-I')
      throw new Error('br_netfilter filters bridged traffic here and iptables is not on PATH')
    return
  }
  const rule = ['FORWARD', '-i', bridge, '-o', bridge, '-j', 'ACCEPT']
  const present = await run(iptables, ['-w', '-C', ...rule]).then(
    () => true,
    () => false,
  )
  if (action === '-I' && !present)
    await run(iptables, ['-w', '-I', 'FORWARD', '1', ...rule.slice(1)])
  if (action === '-D' && present) await run(iptables, ['-w', '-D', ...rule])
}

async function ensureBridge(ipPath: string, bridge: string): Promise<void> {
  if (!(await exists(`/sys/class/net/${bridge}`))) {
    await run(ipPath, [
      'link',
      'add',
      bridge,
      'type',
      'bridge',
      'nf_call_iptables',
      '0',
      'nf_call_ip6tables',
      '0',
      'nf_call_arptables',
      '0',
    ])
  }
  await disableIpv6(bridge)
  await bridgeForwardRule(bridge, '-I', process.env.PATH)
  await run(ipPath, ['link', 'set', bridge, 'up'])
}

/** The files of every server's global networks on this host. */
const files = new GlobalNetworkFiles()

export interface GlobalNetworkJoin {
  /** The directory bound into the member's sandbox; its `hosts` is the member's /etc/hosts. */
  hostsDir: string
  address: string
}

/**
 * Puts the workload's namespace `netns` on its network's bridge: a veth pair, the member's
 * address, and its aliases in the network's hosts file.
 */
export async function joinGlobalNetwork(
  ipPath: string,
  stateDir: string,
  workloadId: string,
  network: WorkloadNetwork,
  netns: string,
): Promise<GlobalNetworkJoin> {
  const bridge = bridgeName(stateDir, network.name)
  const veth = hostVethName(stateDir, workloadId)
  return files.locked(bridge, async () => {
    await ensureBridge(ipPath, bridge)
    const state = await files.read(bridge)
    delete state.members[veth]
    const taken = new Set(Object.values(state.members).map((m) => m.address))
    const address =
      network.address !== undefined &&
      /^10\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(network.address) &&
      !taken.has(network.address)
        ? network.address
        : chooseAddress(workloadId, taken)
    await run(ipPath, ['link', 'del', veth]).catch(() => undefined)
    await run(ipPath, [
      'link',
      'add',
      veth,
      'type',
      'veth',
      'peer',
      'name',
      MEMBER_INTERFACE,
      'netns',
      netns,
    ])
    try {
      await disableIpv6(veth)
      await run(ipPath, ['link', 'set', veth, 'master', bridge, 'up'])
      const bits = String(MEMBER_PREFIX_BITS)
      await run(ipPath, ['-n', netns, 'addr', 'add', `${address}/${bits}`, 'dev', MEMBER_INTERFACE])
      await run(ipPath, ['-n', netns, 'link', 'set', MEMBER_INTERFACE, 'up'])
      state.members[veth] = {
        workloadId,
        address,
        aliases: network.aliases,
        hostname: sandboxHostnameOf(workloadId),
      }
      await files.write(bridge, state)
    } catch (error) {
      await run(ipPath, ['link', 'del', veth]).catch(() => undefined)
      throw error
    }
    return { hostsDir: files.hostsDirOf(bridge), address }
  })
}

/**
 * Takes the workload off whichever global network it is on (whatever this driver's settings:
 * another may have started it): its veth goes, its names leave the hosts file, and a bridge
 * left without members goes too. Not on one: nothing.
 */
export async function leaveGlobalNetworks(
  ipPath: string | undefined,
  stateDir: string,
  workloadId: string,
): Promise<void> {
  const veth = hostVethName(stateDir, workloadId)
  for (const bridge of await files.bridges()) {
    await files.locked(bridge, async () => {
      const state = await files.read(bridge)
      if (!state.members[veth]) return
      delete state.members[veth]
      if (ipPath !== undefined) await run(ipPath, ['link', 'del', veth]).catch(() => undefined)
      if (Object.keys(state.members).length > 0) {
        await files.write(bridge, state)
        return
      }
      if (ipPath !== undefined) await run(ipPath, ['link', 'del', bridge]).catch(() => undefined)
      await bridgeForwardRule(bridge, '-D', process.env.PATH).catch(() => undefined)
      await files.remove(bridge)
    })
  }
}
