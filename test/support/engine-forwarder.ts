import net from 'node:net'
import Docker from 'dockerode'

/** This machine's Docker engine, which the forwarder below passes connections on to. */
export const ENGINE_SOCKET = '/var/run/docker.sock'

export interface EngineForwarder {
  /** Closes the socket and every connection through it: the host's engine is lost. */
  lose(): Promise<void>
  /** Opens the socket again: the engine is back. */
  restore(): Promise<void>
  /** Drops every connection open now (the socket stays open); how many there were. */
  cut(): number
  /**
   * Stops passing on what the engine sends over the connections open now whose last request
   * line matches, leaving them open (as the engine's own log reader does when it stalls); how
   * many there were.
   */
  freeze(request: RegExp): number
  /** How many requests whose request line matches were sent through it so far. */
  seen(request: RegExp): number
}

/**
 * A unix socket at `socketPath` forwarded to this machine's engine: a host whose engine a
 * test can lose and get back without touching the engine the other tests use.
 */
export async function engineForwarder(socketPath: string): Promise<EngineForwarder> {
  const open = new Set<net.Socket>()
  /** Each open connection's engine side, with its client side and its last request line. */
  const fromEngine = new Map<net.Socket, { client: net.Socket; request: string }>()
  const requestLines: string[] = []
  const server = net.createServer((client) => {
    const engine = net.connect(ENGINE_SOCKET)
    open.add(client).add(engine)
    const pair = { client, request: '' }
    fromEngine.set(engine, pair)
    client.on('data', (chunk: Buffer) => {
      const line = chunk.subarray(0, 2048).toString('latin1').split('\r\n')[0]!
      if (/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(line)) {
        pair.request = line
        requestLines.push(line)
      }
    })
    const end = () => {
      client.destroy()
      engine.destroy()
      open.delete(client)
      open.delete(engine)
      fromEngine.delete(engine)
    }
    client.on('error', end).on('close', end)
    engine.on('error', end).on('close', end)
    client.pipe(engine).pipe(client)
  })
  const listen = () => new Promise<void>((resolve) => server.listen(socketPath, resolve))
  await listen()
  return {
    lose: async () => {
      if (!server.listening) return
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const socket of open) socket.destroy()
      await closed
    },
    restore: async () => {
      if (!server.listening) await listen()
    },
    cut: () => {
      const dropped = [...open]
      for (const socket of dropped) socket.destroy()
      return dropped.length / 2
    },
    freeze: (request) => {
      let frozen = 0
      for (const [engine, pair] of fromEngine) {
        if (!request.test(pair.request)) continue
        engine.unpipe(pair.client)
        engine.pause()
        fromEngine.delete(engine)
        frozen++
      }
      return frozen
    },
    seen: (request) => requestLines.filter((line) => request.test(line)).length,
  }
}

/**
 * Removes the containers of these workloads from this machine's engine, with their tenant
 * networks once no container uses them (as the platform's own remove does). A worker lost with
 * its engine keeps its container by design, which a test then removes itself; so does a pod's
 * test once its platform is closed (a running one starts a RUNNING pod's container again).
 */
export async function removeWorkloadContainers(workloadIds: readonly string[]): Promise<void> {
  const engine = new Docker({ socketPath: ENGINE_SOCKET })
  for (const id of workloadIds) {
    const found = await engine.listContainers({
      all: true,
      filters: { label: [`podyard.workload=${id}`] },
    })
    for (const container of found) {
      await engine.getContainer(container.Id).remove({ force: true })
      const network = container.HostConfig?.NetworkMode ?? ''
      if (network.startsWith('podyard-')) {
        // Another container of the account may still use it.
        await engine
          .getNetwork(network)
          .remove()
          .catch(() => undefined)
      }
    }
  }
}
