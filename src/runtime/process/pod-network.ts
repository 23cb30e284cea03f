import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { access, mkdir, readFile, rm } from 'node:fs/promises'
import { networkInterfaces } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import type { WorkloadSpec } from '../driver.js'
import { cidrText, type EgressRules } from '../../shared/egress-cidrs.js'
import { findExecutable } from './bubblewrap.js'

/**
 * A sandboxed workload's own network namespace (docs/runtime.md, "Network"). `ip netns` makes
 * it (a file under /run/netns the driver can find again after a restart); pasta (Debian's
 * `passt` package) gives it user-mode egress through the host's sockets and publishes its
 * declared ports on the host, the same numbers on both sides. The namespace's loopback is its
 * own: the host's loopback services (the API, PostgreSQL, Redis) and other workloads' ports are
 * not there. Outbound connections leave through pasta, which runs in the host's namespace and
 * would reach the host's own addresses and the link-local metadata address: those are
 * unreachable routes inside the namespace, which the workload (no capabilities) cannot remove.
 */
export interface PodNetwork {
  pastaPath: string
  ipPath: string
  nsenterPath: string
  /** The operator's egress policy (config `containment.egress`); default: anywhere. */
  egress?: EgressRules
  /** pasta's interface and gateway where the host has no default route (`hostInterfaceArgs`). */
  interfaceArgs?: string[]
}

/** Destinations no workload reaches besides the host's own addresses: metadata services. */
export const BLOCKED_DESTINATIONS = ['169.254.0.0/16', 'fd00:ec2::254/128'] as const

const NETNS_DIR = '/run/netns'
/** Where pasta writes its pid, so that a restart can wait for the old one to let go of the ports. */
const PID_DIR = '/run/podyard-pasta'
/** How long a stopped pasta may take to exit before it is killed. */
const PASTA_EXIT_MS = 2000
const COMMAND_TIMEOUT_MS = 10_000

/**
 * The namespace's TCP send buffer bound (net.ipv4.tcp_wmem, per namespace). pasta (passt of
 * 2023, Debian 12) takes what a workload sends out of the namespace only as far as its socket
 * on the host has room, and advertises more window than that room: with the kernel's default
 * bound (4 MiB) the workload's stack keeps megabytes in flight, pasta drops what does not fit,
 * every drop waits for a retransmission timeout, and a long upload crawled (~16 MiB/s) until
 * pasta reset it (ECONNRESET after some tens of MiB). With 256 KiB in flight the drops stop
 * (bench/README.md, "bench/containment").
 */
export const NAMESPACE_TCP_WMEM = '4096 16384 262144'
/**
 * The retransmission timeout's floor on the namespace's default routes: the path to pasta is
 * in memory, so the kernel's 200 ms floor only stalls a stream whose segment pasta dropped, and
 * the probes of a zero window (pasta sends no update when its socket drains) back off from it.
 */
export const NAMESPACE_RTO_MIN = '5ms'

export type PodNetworkProbe = { ok: true; network: PodNetwork } | { ok: false; reason: string }

function run(file: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { timeout: COMMAND_TIMEOUT_MS },
      (error, _stdout, stderr) => {
        if (error) {
          const said = stderr
            .split('\n')
            .filter((l) => l !== '' && !l.startsWith('Failed to send'))
            .join('; ')
          reject(new Error(`${[file, ...args].join(' ')}: ${said || error.message}`))
        } else resolve()
      },
    )
    if (input !== undefined) {
      // A command that fails before reading its input says why through its exit (above).
      child.stdin?.on('error', () => undefined)
      child.stdin?.end(input)
    }
  })
}

/** The namespace's name: short (ip's limit), and distinct per state directory and workload. */
export function namespaceName(stateDir: string, id: string): string {
  const hash = createHash('sha256').update(`${stateDir}\0${id}`).digest('hex')
  return `podyard-${hash.slice(0, 16)}`
}

export function namespacePath(name: string): string {
  return `${NETNS_DIR}/${name}`
}

/** The host's own addresses, which a workload's outbound connections must not reach. */
function hostAddresses(): string[] {
  const out: string[] = []
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.internal || address.address.startsWith('fe80:')) continue
      out.push(`${address.address}/${address.family === 'IPv4' ? 32 : 128}`)
    }
  }
  return out
}

interface IpAddressJson {
  ifname?: string
  addr_info?: { family?: string; local?: string; prefixlen?: number }[]
}

/**
 * pasta copies the namespace's address and routes from the host's interface of the default
 * route; a host with no IPv4 default route (an isolated network) has none, and pasta fails ("No
 * external routable interface"). There it is told which to copy (`-i`): the first interface
 * with a global IPv4 address (`ip -j -4 addr show scope global up`), and a gateway (`-g`) in
 * its subnet, which pasta answers for itself (never reached on the link: --no-map-gw). Empty
 * where the host has a default route (`ip -j -4 route show default`): pasta's own choice;
 * undefined where no interface has an address such a gateway fits beside.
 */
export function hostInterfaceArgs(
  defaultRoutesJson: string,
  addressesJson: string,
): string[] | undefined {
  if ((JSON.parse(defaultRoutesJson.trim() || '[]') as unknown[]).length > 0) return []
  for (const link of JSON.parse(addressesJson.trim() || '[]') as IpAddressJson[]) {
    for (const address of link.addr_info ?? []) {
      const prefix = address.prefixlen ?? 32
      if (address.family !== 'inet' || !address.local || !link.ifname || prefix > 30) continue
      const own = address.local.split('.').reduce((n, octet) => n * 256 + Number(octet), 0)
      const network = own - (own % 2 ** (32 - prefix))
      const gateway = own === network + 1 ? network + 2 : network + 1
      const dotted = [24, 16, 8, 0].map((shift) => Math.floor(gateway / 2 ** shift) % 256)
      return ['-i', link.ifname, '-g', dotted.join('.')]
    }
  }
  return undefined
}

/** The pasta arguments for a spec: its declared ports in, the loopback ports it asks out. */
export function pastaArgs(
  spec: Pick<WorkloadSpec, 'ports' | 'loopbackPorts'>,
  netns: string,
  interfaceArgs: string[] = [],
) {
  const list = (ports: number[]) => (ports.length > 0 ? [...new Set(ports)].join(',') : 'none')
  const tcp = spec.ports.filter((p) => p.protocol !== 'udp').map((p) => p.public)
  const udp = spec.ports.filter((p) => p.protocol === 'udp').map((p) => p.public)
  return [
    // pasta drops to nobody by default, which may not enter a namespace root made.
    '--runas',
    '0',
    '--config-net',
    // Without it the gateway's address leads to the host's loopback.
    '--no-map-gw',
    '--quiet',
    '--tcp-ports',
    list(tcp),
    '--udp-ports',
    list(udp),
    '--tcp-ns',
    list(spec.loopbackPorts ?? []),
    '--udp-ns',
    'none',
    '--pid',
    pidFileOf(netns),
    '--netns',
    namespacePath(netns),
    ...interfaceArgs,
  ]
}

function pidFileOf(name: string): string {
  return `${PID_DIR}/${name}.pid`
}

/**
 * Whether `pid` is still a running pasta (its pid may be another process's once it is gone; a
 * zombie has let go of its ports, whoever reaps it).
 */
async function isPasta(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  const match = /^\d+ \((.*)\) (\S)/.exec(stat)
  if (!match) return false
  return (match[1]!.startsWith('pasta') || match[1]!.startsWith('passt')) && match[2] !== 'Z'
}

/**
 * Removes a workload's namespace and ends its pasta, waiting for it to be gone: a workload
 * started again at once publishes the same ports, which the old pasta would still hold.
 * Absent already: nothing.
 */
export async function closePodNetwork(
  network: Pick<PodNetwork, 'ipPath'>,
  name: string,
): Promise<void> {
  const pidFile = pidFileOf(name)
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim())
  const exists = await access(namespacePath(name)).then(
    () => true,
    () => false,
  )
  if (exists) await run(network.ipPath, ['netns', 'delete', name]).catch(() => undefined)
  if (Number.isInteger(pid) && pid > 0 && (await isPasta(pid))) {
    // It would see the namespace go and leave by itself, but only after a while.
    try {
      process.kill(pid, 'SIGTERM')
    } catch {
      // gone meanwhile
    }
    const deadline = Date.now() + PASTA_EXIT_MS
    while ((await isPasta(pid)) && Date.now() < deadline) await sleep(10)
    if (await isPasta(pid)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone meanwhile
      }
      while (await isPasta(pid)) await sleep(10)
    }
  }
  await rm(pidFile, { force: true })
}

/**
 * Makes the workload's namespace ready before its command starts: created afresh (a leftover of
 * an earlier run removed), pasta attached (it returns once the interface is configured), and
 * the blocked destinations made unreachable.
 */
export async function openPodNetwork(
  network: PodNetwork,
  name: string,
  spec: Pick<WorkloadSpec, 'ports' | 'loopbackPorts'>,
): Promise<void> {
  await closePodNetwork(network, name)
  await mkdir(PID_DIR, { recursive: true, mode: 0o700 })
  await run(network.ipPath, ['netns', 'add', name])
  try {
    await run(network.pastaPath, pastaArgs(spec, name, network.interfaceArgs))
    const defaults = await tuneNamespaceTcp(network, name)
    const denied = [...BLOCKED_DESTINATIONS, ...hostAddresses(), ...(network.egress?.deny ?? [])]
    // One `ip` for all the routes: each process spawned from a server of some hundreds of MB
    // costs it milliseconds of CPU, and this was a dozen per workload start.
    const commands = namespaceRouteCommands(defaults, [...new Set(denied.map(cidrText))])
    await run(network.ipPath, ['-n', name, '-batch', '-'], commands.join('\n') + '\n')
    if (network.egress && network.egress.allow.length > 0) {
      await restrictToAllowed(network, name, network.egress.allow.map(cidrText))
    }
  } catch (error) {
    await closePodNetwork(network, name)
    throw error
  }
}

/**
 * Outbound traffic only to `allowed` (config `containment.egress.allow`), per address family:
 * each allowed CIDR gets a route through pasta's gateway, the default route becomes
 * unreachable, and so does the on-link subnet pasta copied from the host (replaced by a route
 * to the gateway alone). A family without a default route has no way out to restrict. Denied destinations keep their unreachable routes: the most specific
 * route wins, and config validation refuses an allowed CIDR inside a denied one.
 */
async function restrictToAllowed(network: PodNetwork, name: string, allowed: string[]) {
  for (const family of ['-4', '-6'] as const) {
    const ip = (...args: string[]) => run(network.ipPath, ['-n', name, family, ...args])
    const defaults = await output(network.ipPath, ['-n', name, family, 'route', 'show', 'default'])
    const gateway = /^default via (\S+) dev (\S+)/m.exec(defaults)
    const mine = allowed.filter((cidr) => cidr.includes(':') === (family === '-6'))
    if (gateway) {
      const [, via, dev] = gateway as unknown as [string, string, string]
      const routes = await output(network.ipPath, ['-n', name, family, 'route', 'show'])
      for (const line of routes.split('\n')) {
        const subnet = /^(\S+) dev (\S+) proto kernel/.exec(line.trim())
        if (subnet && !subnet[1]!.startsWith('fe80:'))
          await ip('route', 'del', subnet[1]!, 'dev', subnet[2]!)
      }
      await ip('route', 'replace', via, 'dev', dev, 'scope', 'link')
      for (const cidr of mine) await ip('route', 'add', cidr, 'via', via, 'dev', dev)
      await ip('route', 'del', 'default')
      await ip('route', 'add', 'unreachable', 'default')
    }
  }
}

function output(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: COMMAND_TIMEOUT_MS }, (error, stdout, stderr) => {
      if (error)
        reject(new Error(`${[file, ...args].join(' ')}: ${stderr.trim() || error.message}`))
      else resolve(stdout)
    })
  })
}

/** A namespace's default routes as `ip route show default` lists them, per address family. */
export interface DefaultRoutes {
  ipv4: string
  ipv6: string
}

/**
 * The `ip -batch` line that gives a `default via X dev Y ...` route the namespace's RTO floor
 * (the same gateway and device); null when the line is no such route. The destination is
 * written out (`0.0.0.0/0`, `::/0`): a batch line cannot name the family, and `default` alone
 * means IPv4.
 */
export function defaultRouteWithRtoMin(line: string, family: 'ipv4' | 'ipv6'): string | null {
  const match = /^default via (\S+) dev (\S+)/.exec(line.trim())
  if (!match) return null
  const destination = family === 'ipv4' ? '0.0.0.0/0' : '::/0'
  return `route change ${destination} via ${match[1]} dev ${match[2]} rto_min ${NAMESPACE_RTO_MIN}`
}

/**
 * The `ip -batch` lines that set a new namespace's routes: its default routes' RTO floor, then
 * an unreachable route to each denied destination (`ip` tells the family from the address).
 */
export function namespaceRouteCommands(defaults: DefaultRoutes, denied: string[]): string[] {
  const changes = (['ipv4', 'ipv6'] as const).flatMap((family) =>
    defaults[family].split('\n').flatMap((line) => defaultRouteWithRtoMin(line, family) ?? []),
  )
  return [...changes, ...denied.map((destination) => `route add unreachable ${destination}`)]
}

/** Separates the two families' default routes in tuneNamespaceTcp's output. */
const FAMILY_SEPARATOR = '--podyard-ipv6--'

/**
 * Sets the namespace's TCP send buffer bound (NAMESPACE_TCP_WMEM) and reads its default routes,
 * in one process: /proc/sys/net is the namespace of whoever opens it, so it is written from
 * inside, where `ip` then lists the routes.
 */
async function tuneNamespaceTcp(network: PodNetwork, name: string): Promise<DefaultRoutes> {
  const listed = await output(network.nsenterPath, [
    `--net=${namespacePath(name)}`,
    '/bin/sh',
    '-c',
    `echo '${NAMESPACE_TCP_WMEM}' > /proc/sys/net/ipv4/tcp_wmem && "$0" -4 route show default && echo ${FAMILY_SEPARATOR} && "$0" -6 route show default`,
    network.ipPath,
  ])
  const [ipv4 = '', ipv6 = ''] = listed.split(`${FAMILY_SEPARATOR}\n`)
  return { ipv4, ipv6 }
}

/**
 * Removes the namespace of a workload if it has one, whatever this driver's settings: a driver
 * of `sandbox: none` or `podNetwork: host` may remove what another started.
 */
export async function releasePodNetwork(name: string, searchPath: string | undefined) {
  const exists = await access(namespacePath(name)).then(
    () => true,
    () => false,
  )
  if (!exists) return
  const ipPath = await findExecutable('ip', searchPath)
  if (ipPath !== undefined) await closePodNetwork({ ipPath }, name)
}

/**
 * Whether workloads can get namespaces here: the server is root (the namespace is the host
 * user namespace's, so the workload's unprivileged user cannot change it), ip, nsenter and
 * pasta are there, and a namespace can really be made and connected.
 */
export async function probePodNetwork(searchPath: string | undefined): Promise<PodNetworkProbe> {
  if (process.getuid?.() !== 0) {
    return { ok: false, reason: 'network namespaces need the server to run as root' }
  }
  const pastaPath = await findExecutable('pasta', searchPath)
  if (pastaPath === undefined) return { ok: false, reason: 'pasta (Debian: passt) is not on PATH' }
  const ipPath = await findExecutable('ip', searchPath)
  if (ipPath === undefined) return { ok: false, reason: 'ip (iproute2) is not on PATH' }
  const nsenterPath = await findExecutable('nsenter', searchPath)
  if (nsenterPath === undefined) return { ok: false, reason: 'nsenter (util-linux) is not on PATH' }
  const name = namespaceName(`probe-${process.pid}`, `${Date.now()}`)
  let network: PodNetwork = { pastaPath, ipPath, nsenterPath }
  try {
    const interfaceArgs = hostInterfaceArgs(
      await output(ipPath, ['-j', '-4', 'route', 'show', 'default']),
      await output(ipPath, ['-j', '-4', 'addr', 'show', 'scope', 'global', 'up']),
    )
    if (interfaceArgs === undefined) {
      return {
        ok: false,
        reason:
          'this host has no IPv4 default route and no network interface with an IPv4 address ' +
          "to give workloads' namespaces theirs from (pasta needs one)",
      }
    }
    if (interfaceArgs.length > 0) network = { ...network, interfaceArgs }
    await openPodNetwork(network, name, { ports: [] })
    return { ok: true, network }
  } catch (error) {
    return { ok: false, reason: (error as Error).message }
  } finally {
    await closePodNetwork(network, name)
  }
}
