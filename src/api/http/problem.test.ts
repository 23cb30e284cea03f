import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { AppError } from '../../shared/app-error.js'
import { installProblemHandlers } from './problem.js'

async function appThrowing(error: unknown) {
  const logged: unknown[] = []
  const app = Fastify({
    logger: { level: 'error', stream: { write: (line: string) => logged.push(JSON.parse(line)) } },
  })
  installProblemHandlers(app)
  app.get('/boom', async () => {
    throw error
  })
  app.post('/echo', async (request) => request.body)
  await app.ready()
  return { app, logged }
}

describe('problem handlers', () => {
  it('turns an unexpected fault into a 500 that leaks nothing, and logs the stack', async () => {
    const { app, logged } = await appThrowing(new TypeError('secret internals at /srv/x.ts:12'))
    const response = await app.inject('/boom')
    expect(response.statusCode).toBe(500)
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(response.json()).toEqual({
      title: 'Internal Server Error',
      status: 500,
      detail: 'an unexpected error occurred; it has been logged',
    })
    expect(response.body).not.toContain('secret internals')
    expect(JSON.stringify(logged)).toContain('secret internals')
  })

  it('maps registry codes to statuses, with Retry-After for rate limits', async () => {
    const { app } = await appThrowing(
      new AppError('RATE_LIMITED', 'slow down', { retryAfterSeconds: 7 }),
    )
    const response = await app.inject('/boom')
    expect(response.statusCode).toBe(429)
    expect(response.headers['retry-after']).toBe('7')
    expect(response.json()).toEqual({
      title: 'Too Many Requests',
      status: 429,
      detail: 'slow down',
    })
  })

  it('answers 415 for a body that is not JSON', async () => {
    const { app } = await appThrowing(new Error('unused'))
    const response = await app.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'text/csv' },
      payload: 'a,b',
    })
    expect(response.statusCode).toBe(415)
    expect(response.json()).toMatchObject({ title: 'Unsupported Media Type', status: 415 })
  })
})
