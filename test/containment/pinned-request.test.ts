import { createServer } from 'node:net'
import type { LookupAddress } from 'node:dns'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  pinnedLookup,
  pinnedRequest,
  type CheckedAddress,
} from '../../src/shared/pinned-request.js'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js'

const LOOPBACK: CheckedAddress[] = [{ address: '127.0.0.1', family: 4 }]

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('pinned requests (real HTTP on loopback)', () => {
  let receiver: WebhookReceiver
  beforeEach(async () => {
    receiver = await startWebhookReceiver()
  })
  afterEach(async () => {
    await receiver.close()
  })

  const post = (url: string, addresses = LOOPBACK, signal = AbortSignal.timeout(2_000)) => {
    const parsed = new URL(url)
    return pinnedRequest({
      url: parsed,
      host: parsed.hostname,
      port: Number(parsed.port),
      addresses,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"id":"j1"}',
      signal,
    })
  }

  it('connects to the checked address, never resolving the name again', async () => {
    // No resolver knows this name (.invalid, RFC 2606): only the checked address is used.
    const answer = await post(`http://receiver.invalid:${receiver.port}/hook?x=1`)
    expect(answer).toEqual({ status: 200 })
    expect(receiver.received).toHaveLength(1)
    expect(receiver.received[0]).toMatchObject({
      method: 'POST',
      path: '/hook?x=1',
      body: '{"id":"j1"}',
    })
    // The receiver sees the name the user wrote, as a virtual host would need.
    expect(receiver.received[0]!.headers.host).toBe(`receiver.invalid:${receiver.port}`)
  })

  it('fails rather than connect when no checked address is of the family asked for', async () => {
    const answer = await post(`http://receiver.invalid:${receiver.port}/hook`, [])
    expect(answer).toMatchObject({ error: 'failed' })
    expect(receiver.received).toHaveLength(0)
  })

  it('answers a redirect with its status and does not follow it', async () => {
    const target = await startWebhookReceiver()
    try {
      receiver.script({ redirectTo: target.url })
      expect(await post(receiver.url)).toEqual({ status: 302 })
      expect(target.received).toHaveLength(0)
    } finally {
      await target.close()
    }
  })

  it('sends the URL’s user and password as basic authentication', async () => {
    await post(`http://hook%20user:p%40ss@receiver.invalid:${receiver.port}/hook`)
    expect(receiver.received[0]!.headers.authorization).toBe(
      `Basic ${Buffer.from('hook user:p@ss').toString('base64')}`,
    )
  })

  it('reports a refused connection, and an abort, without an answer', async () => {
    const refused = await post(`http://127.0.0.1:${await closedPort()}/hook`)
    expect(refused).toMatchObject({ error: 'failed' })
    expect('detail' in refused && refused.detail).toMatch(/ECONNREFUSED/)

    receiver.script('hang')
    const abort = new AbortController()
    const pending = post(receiver.url, LOOPBACK, abort.signal)
    await receiver.waitFor(1)
    abort.abort()
    expect(await pending).toEqual({ error: 'aborted', detail: 'aborted' })
    receiver.releaseHeld()
  })
})

describe('pinned lookup', () => {
  const both: CheckedAddress[] = [
    { address: '93.184.216.34', family: 4 },
    { address: '2606:4700:4700::1111', family: 6 },
  ]
  const lookUp = (options: object) =>
    new Promise<{ error: Error | null; address: string | LookupAddress[]; family?: number }>(
      (resolve) =>
        pinnedLookup(both)('hooks.example', options, (error, address, family) =>
          resolve({ error, address, ...(family === undefined ? {} : { family }) }),
        ),
    )

  it('answers with the checked addresses only, of the family asked for', async () => {
    expect(await lookUp({})).toEqual({ error: null, address: '93.184.216.34', family: 4 })
    expect(await lookUp({ family: 6 })).toEqual({
      error: null,
      address: '2606:4700:4700::1111',
      family: 6,
    })
    expect(await lookUp({ all: true })).toEqual({ error: null, address: both })
    expect(await lookUp({ family: 4, all: true })).toEqual({ error: null, address: [both[0]] })
  })
})
