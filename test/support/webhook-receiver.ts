import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ReceivedWebhook {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: string
}

/**
 * What the receiver does with a request: answer with this status, hold it unanswered, or
 * answer 302 with this Location.
 */
export type ReceiverBehaviour = number | 'hang' | { redirectTo: string }

export interface WebhookReceiver {
  url: string
  port: number
  received: ReceivedWebhook[]
  /** Behaviours for the next requests, in order; once used up, every request gets 200. */
  script(...behaviours: ReceiverBehaviour[]): void
  /** Resolves once `count` requests have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<void>
  /** Answers the held requests with 200. */
  releaseHeld(): void
  close(): Promise<void>
}

/**
 * A real HTTP receiver of webhooks for tests (node:http on a free port of a loopback address:
 * 127.0.0.1 unless another is given; Linux answers on all of 127.0.0.0/8).
 */
export async function startWebhookReceiver(host = '127.0.0.1'): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = []
  const behaviours: ReceiverBehaviour[] = []
  const held: Array<() => void> = []
  const waiters: Array<{ count: number; resolve: () => void }> = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      received.push({
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      })
      for (const waiter of [...waiters]) {
        if (received.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve()
        }
      }
      const behaviour = behaviours.shift() ?? 200
      if (behaviour === 'hang') {
        held.push(() => response.writeHead(200).end('late'))
        return
      }
      if (typeof behaviour === 'object') {
        response.writeHead(302, { location: behaviour.redirectTo }).end()
        return
      }
      response.writeHead(behaviour, { 'content-type': 'text/plain' }).end(`answer ${behaviour}`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host}:${port}/hook`,
    port,
    received,
    script: (...next) => behaviours.push(...next),
    waitFor: (count, timeoutMs = 5_000) =>
      received.length >= count
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`waited ${timeoutMs} ms for ${count} webhook(s)`)),
              timeoutMs,
            )
            waiters.push({
              count,
              resolve: () => {
                clearTimeout(timer)
                resolve()
              },
            })
          }),
    releaseHeld: () => {
      for (const answer of held.splice(0)) answer()
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
