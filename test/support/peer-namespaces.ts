import { execFileSync, spawn, type ChildProcess } from 'node:child_process'

/**
 * Listeners outside the host's own addresses for egress tests: network namespaces of the
 * test's own, each joined to the host by a veth pair on a private /30 of this machine only,
 * answering `peer-<name>` on PEER_PORT at `<subnet>.2`. Needs root.
 */
export const PEER_PORT = 7300

export interface PeerNamespace {
  name: string
  namespace: string
  link: string
  subnet: string
  /** The listener's address. */
  address: string
  /** The /30 it is on. */
  cidr: string
}

/** A peer named `name`, on 10.<second>.<pid-derived>.0/30: distinct per test process. */
export function peerNamespace(name: string, second: number): PeerNamespace {
  const tag = process.pid % 100000
  const subnet = `10.${second}.${process.pid % 250}`
  return {
    name,
    namespace: `pyt-eg${name}-${process.pid}`,
    link: `pye${name}${tag}`,
    subnet,
    address: `${subnet}.2`,
    cidr: `${subnet}.0/30`,
  }
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

export function removePeer(peer: PeerNamespace): void {
  for (const args of [
    ['link', 'del', `${peer.link}h`],
    ['netns', 'del', peer.namespace],
  ]) {
    try {
      ip(...args)
    } catch {
      // not there
    }
  }
}

/** Makes the peer's namespace and starts its listener; resolves once it listens. */
export async function startPeer(peer: PeerNamespace): Promise<ChildProcess> {
  removePeer(peer)
  ip('netns', 'add', peer.namespace)
  ip('link', 'add', `${peer.link}h`, 'type', 'veth', 'peer', 'name', `${peer.link}p`)
  ip('link', 'set', `${peer.link}p`, 'netns', peer.namespace)
  ip('addr', 'add', `${peer.subnet}.1/30`, 'dev', `${peer.link}h`)
  ip('link', 'set', `${peer.link}h`, 'up')
  ip('-n', peer.namespace, 'addr', 'add', `${peer.address}/30`, 'dev', `${peer.link}p`)
  ip('-n', peer.namespace, 'link', 'set', `${peer.link}p`, 'up')
  const code = `require("net").createServer((s) => s.end("peer-${peer.name}\\n")).listen(${PEER_PORT}, () => console.log("up"))`
  const child = spawn('ip', ['netns', 'exec', peer.namespace, process.execPath, '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`peer ${peer.name} is not up in 10 s`)), 10_000)
    child.stdout!.once('data', () => {
      clearTimeout(timer)
      resolve()
    })
    child.once('exit', (exit) => reject(new Error(`peer ${peer.name} exited (${exit})`)))
  })
  return child
}
