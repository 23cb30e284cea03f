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

export function installServerClosing(app: FastifyInstance): void {
  const closing = new AbortController()
  app.decorate('closing', closing.signal)
  app.addHook('preClose', (done) => {
    closing.abort()
    done()
  })
}
