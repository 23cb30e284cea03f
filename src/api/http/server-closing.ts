import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Aborted when the server starts to close: answers that stay open on their own (server-sent
     * event followers of logs and job streams) end at once, instead of holding the close up for
     * as long as their client stays connected.
     */
    closing: AbortSignal
  }
}

/** A request still unanswered this long after the close began is cut off with its connection. */
const CLOSE_DRAIN_MS = 10_000

/**
 * Closing the server ends every connection as soon as no request of its own is in progress:
 * at once for one that is idle, that never sent a request or sent half of one, when its answer
 * is done for the others (at most CLOSE_DRAIN_MS later). Node's close waits for every
 * connection but the idle ones: a client that connected and sent nothing (a stray process, a
 * browser's preconnect, a slow client) held it up for ever, and one answered during the close
 * for the keep-alive timeout (72 s).
 */
export function installServerClosing(app: FastifyInstance): void {
  const closing = new AbortController()
  app.decorate('closing', closing.signal)
  const connections = new Set<Socket>()
  /** Requests in progress, by connection (none: not in the map). */
  const inProgress = new Map<Socket, number>()
  let draining = false

  function answered(this: ServerResponse): void {
    const socket = this.req.socket
    const left = (inProgress.get(socket) ?? 1) - 1
    if (left > 0) inProgress.set(socket, left)
    else {
      inProgress.delete(socket)
      // What is written is sent before the connection ends.
      if (draining) socket.end()
    }
  }
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket)
    socket.once('close', () => {
      connections.delete(socket)
      inProgress.delete(socket)
    })
  })
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    inProgress.set(request.socket, (inProgress.get(request.socket) ?? 0) + 1)
    response.on('close', answered)
  })

  app.addHook('preClose', (done) => {
    closing.abort()
    draining = true
    for (const socket of connections) if (!inProgress.has(socket)) socket.destroy()
    const cutOff = setTimeout(() => app.server.closeAllConnections(), CLOSE_DRAIN_MS)
    cutOff.unref()
    app.server.once('close', () => clearTimeout(cutOff))
    done()
  })
}
