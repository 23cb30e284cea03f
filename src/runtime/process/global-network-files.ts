import { createHash } from 'node:crypto'
import { access, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import path from 'node:path'

/**
 * The files of the process driver's global networks (global-network.ts), shared by every
 * podyard server of the host: per bridge, `<bridge>.json` (its members) and `<bridge>.d/hosts`
 * (what the members see at /etc/hosts).
 *
 * Changes are read-modify-write of `<bridge>.json`, so they are serialised per bridge across
 * processes, not only within one: by an abstract Unix socket bound for the change's duration.
 * The kernel frees it when its holder dies, so a crashed server never leaves a stale lock,
 * and abstract sockets are per network namespace, exactly the scope of the bridges they
 * guard.
 *
 * The hosts file is replaced by a rename, so a resolver reads the old file or the new one,
 * never a half-written or empty one. A rename gives the path a new inode, which a bind mount
 * of the file would not follow; the members get its directory bound instead, and /etc/hosts
 * as a link into it (workload-launch.ts).
 */

/** Where the members and hosts files live: /run, since bridges and namespaces end at boot. */
export const GLOBAL_NETWORK_STATE_DIR = '/run/podyard-global'
/** How long a change waits for another process's change of the same bridge. */
const LOCK_WAIT_MS = 30_000

export interface Member {
  workloadId: string
  address: string
  aliases: string[]
  /** The member's host name in its sandbox (its own name resolves to its address). */
  hostname?: string
}

/** `<bridge>.json`: the members of one bridge, by the host side of their veth. */
export interface NetworkState {
  members: Record<string, Member>
}

/** The hosts file text of a network's members: localhost, then each member by its names. */
export function hostsFileText(members: readonly Member[]): string {
  const lines = ['127.0.0.1\tlocalhost', '::1\tlocalhost ip6-localhost ip6-loopback']
  const sorted = [...members].sort((x, y) => (x.address < y.address ? -1 : 1))
  for (const member of sorted) {
    const names = [...member.aliases]
    if (member.hostname !== undefined && !names.includes(member.hostname)) {
      names.push(member.hostname)
    }
    lines.push(`${member.address}\t${names.join(' ')}`)
  }
  return `${lines.join('\n')}\n`
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  )
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Binds the abstract socket `name`, waiting while another process (or change) holds it. */
async function acquireHostLock(name: string): Promise<Server> {
  const deadline = Date.now() + LOCK_WAIT_MS
  for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
    const server = createServer()
    const bound = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      server.once('error', resolve)
      server.listen(`\0${name}`, () => resolve(undefined))
    })
    if (!bound) return server.unref()
    server.close()
    if (bound.code !== 'EADDRINUSE') throw bound
    if (Date.now() > deadline) {
      throw new Error(`the global network's state stayed locked for ${LOCK_WAIT_MS} ms`)
    }
    await sleep(wait)
  }
}

export class GlobalNetworkFiles {
  /** One change at a time per bridge within this process (then the host-wide lock). */
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(readonly dir: string = GLOBAL_NETWORK_STATE_DIR) {}

  /** The directory bound into the members' sandboxes, holding their hosts file. */
  hostsDirOf(bridge: string): string {
    return path.join(this.dir, `${bridge}.d`)
  }

  hostsFileOf(bridge: string): string {
    return path.join(this.hostsDirOf(bridge), 'hosts')
  }

  /** The bridges that have members. */
  async bridges(): Promise<string[]> {
    const files = await readdir(this.dir).catch(() => [] as string[])
    return files.filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length))
  }

  /** Runs `work` alone among every process's changes of `bridge` on this host. */
  locked<T>(bridge: string, work: () => Promise<T>): Promise<T> {
    const inProcess = async (): Promise<T> => {
      const lockName = `podyard-global:${createHash('sha256').update(`${this.dir}\0${bridge}`).digest('hex').slice(0, 32)}`
      const lock = await acquireHostLock(lockName)
      try {
        return await work()
      } finally {
        lock.close()
      }
    }
    const previous = this.queues.get(bridge) ?? Promise.resolve()
    const next = previous.then(inProcess, inProcess)
    const settled = next.catch(() => undefined)
    this.queues.set(bridge, settled)
    void settled.then(() => {
      if (this.queues.get(bridge) === settled) this.queues.delete(bridge)
    })
    return next
  }

  /** The members of `bridge`; call within locked(). */
  async read(bridge: string): Promise<NetworkState> {
    try {
      const text = await readFile(this.stateFileOf(bridge), 'utf8')
      const parsed = JSON.parse(text) as NetworkState
      return { members: parsed.members ?? {} }
    } catch {
      return { members: {} }
    }
  }

  /** Writes the members and their hosts file, each replaced whole; call within locked(). */
  async write(bridge: string, state: NetworkState): Promise<void> {
    await mkdir(this.hostsDirOf(bridge), { recursive: true, mode: 0o755 })
    await this.replace(this.stateFileOf(bridge), JSON.stringify(state), 0o644)
    const text = hostsFileText(Object.values(state.members))
    await this.replace(this.hostsFileOf(bridge), text, 0o644)
    // Members started before the hosts file had a directory of their own bind the file
    // itself: it is rewritten in place for them, as it used to be.
    const legacy = path.join(this.dir, `${bridge}.hosts`)
    if (await exists(legacy)) await writeFile(legacy, text, { mode: 0o644 })
  }

  /** Removes a bridge's files; call within locked(). */
  async remove(bridge: string): Promise<void> {
    await rm(this.stateFileOf(bridge), { force: true })
    await rm(this.hostsDirOf(bridge), { recursive: true, force: true })
    await rm(path.join(this.dir, `${bridge}.hosts`), { force: true })
  }

  private stateFileOf(bridge: string): string {
    return path.join(this.dir, `${bridge}.json`)
  }

  /** Writes a sibling file, then renames it over `file`: readers see one or the other. */
  private async replace(file: string, text: string, mode: number): Promise<void> {
    const temporary = `${file}.${process.pid}.tmp`
    await writeFile(temporary, text, { mode })
    await rename(temporary, file)
  }
}
