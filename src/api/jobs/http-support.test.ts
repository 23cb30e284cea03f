import { Writable } from 'node:stream'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { perJobRouteLogging, QuietRequestLogger } from './http-support.js'

function capture(level: string) {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })
  return { logger: pino({ level }, sink), lines }
}

describe('per-job route logging', () => {
  it('drops info and below, logs warnings and errors with the request id', async () => {
    const { logger, lines } = capture('info')
    const quiet = new QuietRequestLogger(logger, { reqId: 'req-7' })
    quiet.info('incoming request')
    quiet.debug('detail')
    quiet.warn({ a: 1 }, 'careful')
    quiet.error(new Error('boom'))
    await new Promise((resolve) => setImmediate(resolve))
    expect(lines.map((l) => [l.level, l.reqId, l.msg])).toEqual([
      [40, 'req-7', 'careful'],
      [50, 'req-7', 'boom'],
    ])
    expect(quiet.level).toBe('info')
  })

  it("keeps a child (the trace context's, with the trace ids) as quiet, with both bindings", async () => {
    const { logger, lines } = capture('info')
    const child = new QuietRequestLogger(logger, { reqId: 'req-8' }).child({ traceId: 't1' })
    child.info('request completed')
    child.warn('careful')
    await new Promise((resolve) => setImmediate(resolve))
    expect(lines.map((l) => [l.level, l.reqId, l.traceId, l.msg])).toEqual([
      [40, 'req-8', 't1', 'careful'],
    ])
  })

  it('keeps the request log of the per-job routes at debug, and their 5xx errors always', async () => {
    for (const level of ['info', 'debug']) {
      const { logger, lines } = capture(level)
      const app = Fastify({ loggerInstance: logger as FastifyBaseLogger })
      const options = perJobRouteLogging(app)
      app.get('/ok', options, async () => ({ ok: true }))
      app.get('/fails', options, async () => {
        throw new Error('broken')
      })
      expect((await app.inject('/ok')).statusCode).toBe(200)
      expect((await app.inject('/fails')).statusCode).toBe(500)
      await app.close()
      const messages = lines.map((l) => l.msg)
      expect(messages.includes('incoming request')).toBe(level === 'debug')
      expect(
        lines.some((l) => l.level === 50 && (l.err as { message?: string })?.message === 'broken'),
      ).toBe(true)
    }
  })
})
