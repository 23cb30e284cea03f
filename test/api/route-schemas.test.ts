import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildPendingSerializers } from '../../src/api/http/response-serializers.js'
import { compilePendingValidators } from '../../src/api/http/validation.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * Route schemas are compiled when a route is first used, not when the server starts
 * (validation.ts, response-serializers.ts): a schema ajv or fast-json-stringify refuses would
 * otherwise surface only as a failed request. Every route of a platform is registered here and
 * all of their validators and serializers are compiled at once.
 */
describe('route schemas', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform()
  })

  afterAll(() => platform?.close())

  it("a request is validated by its route's validator, compiled at its first use, with its errors", async () => {
    const response = await platform.call('/v2/network-volumes', {
      method: 'POST',
      json: { name: '', size: 9, dataCenterId: 'EU-RO-1', extra: true },
    })
    expect(response.status).toBe(422)
    const body = (await response.json()) as { errors: string[] }
    expect(body.errors).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^body\.size: /),
        expect.stringMatching(/^body\.name: /),
      ]),
    )
  })

  it('every route validator and response serializer compiles', () => {
    expect(compilePendingValidators()).toBeGreaterThan(40)
    expect(buildPendingSerializers()).toBeGreaterThan(40)
  })
})
