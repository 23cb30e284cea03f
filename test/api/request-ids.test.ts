import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_REQUEST_ID_LENGTH } from '../../src/api/http/request-ids.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** A logger whose lines the test reads back. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })
  return { logger: pino({ level: 'info' }, sink), lines }
}

describe('request ids', () => {
  let platform: TestPlatform
  const { logger, lines } = capturingLogger()

  beforeAll(async () => {
    platform = await startTestPlatform({ logLevel: 'info' }, { logger })
  })
  afterAll(() => platform.close())

  it("answers the caller's X-Request-Id and logs the request under it", async () => {
    const id = 'edge-7f3a.9:b/c=d+e@f_g'
    const response = await platform.call('/v2/catalog/gpus', { headers: { 'x-request-id': id } })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-request-id')).toBe(id)
    // One line per request at info, when it is answered: what was asked and what was answered.
    const logged = lines.filter((l) => l.reqId === id)
    expect(logged.map((l) => l.msg)).toEqual(['request completed'])
    expect(logged[0]).toMatchObject({
      req: { method: 'GET', url: '/v2/catalog/gpus' },
      res: { statusCode: 200 },
      responseTime: expect.any(Number),
    })
  })

  it('answers a new UUID when the caller sends none, a long one or an unsafe one', async () => {
    const ids = new Set<string>()
    for (const given of [
      undefined,
      'a'.repeat(MAX_REQUEST_ID_LENGTH + 1),
      'two words',
      'line\tbreak',
      '{"json":1}',
      '',
    ]) {
      const response = await platform.call('/healthz', {
        key: null,
        ...(given === undefined ? {} : { headers: { 'x-request-id': given } }),
      })
      const answered = response.headers.get('x-request-id')!
      expect(answered).toMatch(UUID)
      ids.add(answered)
    }
    expect(ids.size).toBe(6)
    const longest = 'b'.repeat(MAX_REQUEST_ID_LENGTH)
    const kept = await platform.call('/healthz', {
      key: null,
      headers: { 'x-request-id': longest },
    })
    expect(kept.headers.get('x-request-id')).toBe(longest)
  })

  it('carries the request id on errors too', async () => {
    const response = await platform.call('/v2/pods/nope', { headers: { 'x-request-id': 'err-1' } })
    expect(response.status).toBe(404)
    expect(response.headers.get('x-request-id')).toBe('err-1')
    expect(lines.find((l) => l.reqId === 'err-1' && l.msg === 'request completed')).toBeDefined()
  })
})
