import { createServer, Socket } from 'node:net'

/** A TCP port nobody listens on right now (the OS picks it). */
export function freePort(host = '0.0.0.0'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      )
    })
  })
}

/**
 * A connection accepted and then closed within this time was not a workload's: a forwarder
 * (the process driver's pasta, Docker's proxy) accepts on the host before the workload inside
 * listens, and drops the connection when it cannot pass it on.
 */
export const PORT_HOLD_MS = 200

/**
 * True when something accepts TCP connections on the port and keeps one open for PORT_HOLD_MS
 * (or answers on it meanwhile).
 */
export function portAnswers(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket()
    let settled = false
    const done = (answered: boolean) => {
      if (settled) return
      settled = true
      socket.destroy()
      resolve(answered)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('error', () => done(false))
    socket.once('close', () => done(false))
    socket.once('data', () => done(true))
    socket.connect(port, host, () => {
      socket.setTimeout(0)
      setTimeout(() => done(true), PORT_HOLD_MS)
    })
  })
}
