import { Writable } from 'node:stream'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { TEST_ADMIN_KEY, startTestPlatform } from '../support/platform.js'

describe('logs', () => {
  it('never contain an API key or a registry password, even at trace level', async () => {
    const lines: string[] = []
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString())
        done()
      },
    })
    const platform = await startTestPlatform({}, { logger: pino({ level: 'trace' }, sink) })
    try {
      const password = 'registry-password-never-logged'
      await fetch(`${platform.url}/graphql?api_key=${TEST_ADMIN_KEY}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ myself { id } }' }),
      })
      await platform.call('/v2/registries', {
        method: 'POST',
        json: { name: 'r', username: 'u', password },
      })
      await platform.call('/v2/registries', {
        method: 'POST',
        json: { name: 'r2', username: 'u', password, bogus: 1 },
      })
      await platform.call('/v2/catalog/gpus')
      // The query parser decodes parameter names: these authenticate like api_key.
      for (const spelling of ['api%5Fkey', '%61pi_key']) {
        const answer = await fetch(`${platform.url}/graphql?${spelling}=${TEST_ADMIN_KEY}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ myself { id } }' }),
        })
        expect(answer.status, spelling).toBe(200)
        expect(((await answer.json()) as { data?: unknown }).data, spelling).toBeTruthy()
      }
      await fetch(`${platform.url}/graphql?API_KEY=${TEST_ADMIN_KEY}`)
      const log = lines.join('')
      expect(log).toContain('"url":"/graphql?api_key=[redacted]"')
      expect(log).toContain('"url":"/graphql?api%5Fkey=[redacted]"')
      expect(log).toContain('/v2/registries')
      expect(log).not.toContain(TEST_ADMIN_KEY)
      expect(log).not.toContain(password)
    } finally {
      await platform.close()
    }
  })
})
