import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import Docker from 'dockerode'
import type { EngineConnectionOptions } from '../../src/runtime/docker/docker-endpoint.js'
import { SshEngineAgent } from '../../src/runtime/docker/engine-agents.js'

/**
 * The multi-host rig (test/support/multi-host-rig.sh): three Docker engines in network
 * namespaces of this machine, reached over SSH (gpu-node-1, gpu-node-2) and TCP+TLS
 * (gpu-node-3). This module reads the layout the script writes and drives the engines from
 * tests. Opt-in: PODYARD_TEST_MULTIHOST=1, with the rig up (as root).
 */

export const RIG_LAYOUT_FILE = '/run/pyd-rig/rig.json'

export interface RigHost {
  /** gpu-node-N: also the engine's `info.Name` (its dockerd runs under that host name). */
  name: string
  /** N, as the script's stop-engine/start-engine/cut/heal take it. */
  index: number
  namespace: string
  address: string
  transport: 'ssh' | 'tls'
  /** How podyard reaches the engine: ssh://user@address or tcp://address:2376. */
  dockerUrl: string
  /** The engine's own unix socket on this machine, for setting up and cleaning up. */
  socketPath: string
  pidFile: string
  /** `ssh-ed25519 AAAA...`, the host key (SSH hosts only). */
  sshHostKey?: string
}

export interface RigLayout {
  version: 1
  script: string
  bridge: { name: string; address: string; cidr: string }
  ssh: {
    user: string
    privateKeyFile: string
    knownHostsFile: string
    /** ssh_config with the key and known_hosts; `<binDir>/ssh` uses it (for the docker CLI). */
    configFile: string
    binDir: string
  }
  /** The client side of gpu-node-3's TLS: the rig's CA and a client certificate it signed. */
  tls: { dir: string; caFile: string; certFile: string; keyFile: string }
  hosts: RigHost[]
}

export function multiHostEnabled(): boolean {
  return process.env.PODYARD_TEST_MULTIHOST === '1'
}

export function readRigLayout(file = RIG_LAYOUT_FILE): RigLayout {
  if (!existsSync(file))
    throw new Error(
      `the multi-host rig is down: no ${file} (run test/support/multi-host-rig.sh up)`,
    )
  const layout = JSON.parse(readFileSync(file, 'utf8')) as RigLayout
  if (layout.version !== 1 || !Array.isArray(layout.hosts) || layout.hosts.length === 0)
    throw new Error(`${file} is not a multi-host rig layout this module knows (version 1)`)
  return layout
}

export function rigHost(layout: RigLayout, name: string): RigHost {
  const host = layout.hosts.find((h) => h.name === name)
  if (!host)
    throw new Error(`the rig has no host ${name} (${layout.hosts.map((h) => h.name).join(', ')})`)
  return host
}

/** Why the rig cannot be used now, or null when every engine answers on its socket. */
export async function rigUnavailableReason(): Promise<string | null> {
  if (!multiHostEnabled()) return 'PODYARD_TEST_MULTIHOST=1 is not set'
  let layout: RigLayout
  try {
    layout = readRigLayout()
  } catch (error) {
    return (error as Error).message
  }
  for (const host of layout.hosts) {
    try {
      await localDocker(host).ping()
    } catch (error) {
      return `${host.name}'s engine does not answer on ${host.socketPath}: ${(error as Error).message}`
    }
  }
  return null
}

/** PODYARD_TEST_MULTIHOST=1 is set and every engine of the rig answers. */
export async function rigAvailable(): Promise<boolean> {
  return (await rigUnavailableReason()) === null
}

/** The engine through its own unix socket (not through SSH or TLS): for setup and cleanup. */
export function localDocker(host: RigHost): Docker {
  return new Docker({ socketPath: host.socketPath })
}

export interface RemoteDockerOverrides {
  /**
   * The host key to accept instead of the one in the rig's known_hosts, as `type base64`:
   * to check that a wrong key is refused.
   */
  sshHostKey?: string
  /** Leave the client certificate out (the engine must refuse the client). */
  withoutClientCertificate?: boolean
}

/** dockerode options that reach the host's engine over its transport, as podyard would. */
export function remoteDockerOptions(
  layout: RigLayout,
  host: RigHost,
  overrides: RemoteDockerOverrides = {},
): EngineConnectionOptions {
  const url = new URL(host.dockerUrl)
  if (host.transport === 'ssh') {
    const expected = parseHostKey(overrides.sshHostKey ?? knownHostKey(layout, host.address))
    const port = url.port === '' ? 22 : Number(url.port)
    // podyard's own SSH agent, not docker-modem's SSH transport (which also builds an
    // `ssh:host:port` URL that Node.js deprecates).
    return {
      protocol: 'http',
      host: url.hostname,
      port,
      agent: new SshEngineAgent({
        host: url.hostname,
        port,
        username: decodeURIComponent(url.username),
        privateKey: readFileSync(layout.ssh.privateKeyFile),
        // Without a hostVerifier ssh2 accepts any host key.
        hostVerifier: (key: Buffer) => key.equals(expected),
        readyTimeout: 10_000,
      }),
    }
  }
  return {
    protocol: 'https',
    host: url.hostname,
    port: Number(url.port),
    ca: readFileSync(layout.tls.caFile),
    ...(overrides.withoutClientCertificate
      ? {}
      : { cert: readFileSync(layout.tls.certFile), key: readFileSync(layout.tls.keyFile) }),
    timeout: 10_000,
  }
}

export function remoteDocker(
  layout: RigLayout,
  host: RigHost,
  overrides?: RemoteDockerOverrides,
): Docker {
  return new Docker(remoteDockerOptions(layout, host, overrides))
}

/** The `type base64` host key known_hosts holds for an address. */
export function knownHostKey(layout: RigLayout, address: string): string {
  for (const line of readFileSync(layout.ssh.knownHostsFile, 'utf8').split('\n')) {
    const [names, type, key] = line.trim().split(/\s+/)
    if (names && type && key && names.split(',').includes(address)) return `${type} ${key}`
  }
  throw new Error(`${layout.ssh.knownHostsFile} has no key for ${address}`)
}

/** The wire form of a `type base64` key, which ssh2 hands to hostVerifier. */
function parseHostKey(typeAndBase64: string): Buffer {
  const base64 = typeAndBase64.trim().split(/\s+/)[1]
  if (!base64) throw new Error(`not a host key: ${typeAndBase64}`)
  return Buffer.from(base64, 'base64')
}

const execFileAsync = promisify(execFile)

async function runScript(layout: RigLayout, command: string, host: RigHost): Promise<void> {
  await execFileAsync('bash', [layout.script, command, String(host.index)], { timeout: 90_000 })
}

/** Kills the host's dockerd (SIGKILL: a lost host, no clean shutdown). Containers keep running. */
export function stopEngine(layout: RigLayout, host: RigHost): Promise<void> {
  return runScript(layout, 'stop-engine', host)
}

/** Starts the host's dockerd again with the same configuration; resolves once it answers. */
export function startEngine(layout: RigLayout, host: RigHost): Promise<void> {
  return runScript(layout, 'start-engine', host)
}

/** Takes the host's link off the rig bridge: connections to it time out instead of failing. */
export function cutHost(layout: RigLayout, host: RigHost): Promise<void> {
  return runScript(layout, 'cut', host)
}

export function healHost(layout: RigLayout, host: RigHost): Promise<void> {
  return runScript(layout, 'heal', host)
}

/** Whether a TCP connection to address:port opens within timeoutMs. */
export function tcpPortOpen(address: string, port: number, timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address, port })
    const done = (open: boolean) => {
      socket.destroy()
      resolve(open)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/** Where a suite that uses the rig marks it as taken (a directory: its creation is atomic). */
const RIG_LOCK = path.join(path.dirname(RIG_LAYOUT_FILE), 'tests.lock')

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Takes the rig for one suite, waiting while another suite (of this run, which runs files in
 * parallel, or of anyone else's on this machine) has it: suites kill engines, cut links and
 * drain hosts that the others count on. A lock left by a process that died is taken over.
 * Resolves with the release.
 */
export async function holdRig(timeoutMs = 900_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      mkdirSync(RIG_LOCK)
      writeFileSync(path.join(RIG_LOCK, 'pid'), String(process.pid))
      return () => rmSync(RIG_LOCK, { recursive: true, force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let holder = 0
    try {
      holder = Number(readFileSync(path.join(RIG_LOCK, 'pid'), 'utf8'))
    } catch {
      // Being written: the holder is alive.
    }
    if (holder > 0 && !alive(holder)) {
      rmSync(RIG_LOCK, { recursive: true, force: true })
      continue
    }
    if (Date.now() > deadline)
      throw new Error(`the multi-host rig is still held by process ${holder} (${RIG_LOCK})`)
    await sleep(500)
  }
}

/**
 * A fleet file whose hosts are the rig's engines (SSH or TCP+TLS, each host's address as its
 * publicIp) in one data center whose network volumes live under `volumeRoot`.
 */
export function rigFleetYaml(layout: RigLayout, volumeRoot: string): string {
  const hosts = layout.hosts.map((host) => {
    const docker =
      host.transport === 'ssh'
        ? `{ url: "${host.dockerUrl}", sshKey: "${layout.ssh.privateKeyFile}", knownHosts: "${layout.ssh.knownHostsFile}" }`
        : `{ url: "${host.dockerUrl}", tls: { ca: "${layout.tls.caFile}", cert: "${layout.tls.certFile}", key: "${layout.tls.keyFile}" } }`
    return `  - id: ${host.name}
    dataCenterId: EU-RO-1
    cpuFlavors: [cpu3c]
    vcpus: 2
    memoryGb: 8
    publicIp: ${host.address}
    docker: ${docker}`
  })
  return `dataCenters:
  - id: EU-RO-1
    name: EU Romania 1
    region: EUROPE
    networkVolumeRoot: ${volumeRoot}
hosts:
${hosts.join('\n')}
localHost: false
`
}
