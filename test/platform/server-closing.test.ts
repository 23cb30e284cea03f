import http from 'node:http'
import net from 'node:net'
import { describe, expect, it } from 'vitest'
import { createTestEndpoint } from '../support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY } from '../support/platform.js'

/** A TCP connection to the platform's port; resolves once connected. */
async function connect(url: string): Promise<{ socket: net.Socket; ended: Promise<void> }> {
  const { hostname, port } = new URL(url)
  const socket = net.connect(Number(port), hostname)
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  socket.on('error', () => {})
  return { socket, ended: new Promise<void>((resolve) => socket.once('close', () => resolve())) }
}

/**
 * Closing the server (SIGTERM to `podyard serve`, docs/production.md "Shutdown") ends every
 * connection as soon as nothing of its own is in progress. Node's close waits for all but the
 * idle ones: a connection that sent nothing (or half a request) held it up for ever, and one
 * whose answer came during the close held it for the keep-alive timeout (72 s). These cases
 * each hung the close past the test's timeout before.
 */
describe('closing the server with clients connected', () => {
  it('ends a connection that sent nothing, or half a request, at once', async () => {
    const platform = await startTestPlatform()
    const silent = await connect(platform.url)
    const partial = await connect(platform.url)
    partial.socket.write('GET /healthz HTTP/1.1\r\nHost: podyard\r\n')
    await platform.close()
    await Promise.all([silent.ended, partial.ended])
  })

  it('answers a request in progress, then ends its keep-alive connection', async () => {
    const platform = await startTestPlatform()
    const endpointId = await createTestEndpoint(platform)
    const agent = new http.Agent({ keepAlive: true })
    const body = JSON.stringify({ input: { n: 1 } })
    let socket!: net.Socket
    const request = http.request(`${platform.url}/v2/${endpointId}/run`, {
      method: 'POST',
      agent,
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
    })
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      request.on('response', (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }))
      })
      request.on('error', reject)
    })
    await new Promise<void>((resolve) =>
      request.on('socket', (s) => {
        socket = s
        s.once('connect', () => resolve())
      }),
    )
    const socketEnded = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    // Headers and half the body: the request is in progress when the close begins, and is
    // answered after it (its body ends then).
    request.write(body.slice(0, 5))
    await new Promise((resolve) => setTimeout(resolve, 200))
    const closed = platform.close()
    await new Promise((resolve) => setTimeout(resolve, 200))
    request.end(body.slice(5))

    const answered = await answer
    expect(answered.status).toBe(200)
    expect(JSON.parse(answered.text)).toMatchObject({ status: 'IN_QUEUE' })
    await socketEnded
    await closed
    agent.destroy()
  })
})
