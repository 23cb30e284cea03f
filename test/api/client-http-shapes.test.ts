import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { createTestEndpoint, json } from '../support/http.js'

type Json = Record<string, unknown>

/**
 * What RunPod's clients send and read at the HTTP level: a JSON content type
 * on every request, bodies or not, and a string `error` in the error bodies of the job API.
 */
describe('HTTP shapes of real clients', () => {
  let platform: TestPlatform
  const jsonHeader = { 'content-type': 'application/json' }

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  describe('an empty body with Content-Type: application/json is no body', () => {
    it('DELETE /v2/pods/{id} as runpodctl sends it', async () => {
      const created = await json(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: { name: 'empty-body', image: 'busybox', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        }),
        201,
      )
      const deleted = await platform.call(`/v2/pods/${String(created.id)}`, {
        method: 'DELETE',
        headers: jsonHeader,
      })
      expect(deleted.status, await deleted.clone().text()).toBe(204)
    })

    it('a body-less POST and a GET with the header', async () => {
      const endpointId = await createTestEndpoint(platform, 'empty-body')
      const rotated = await platform.call(`/v2/serverless/${endpointId}/worker-key/rotate`, {
        method: 'POST',
        headers: jsonHeader,
      })
      expect(rotated.status, await rotated.clone().text()).toBe(200)
      const listed = await platform.call('/v2/pods', { headers: jsonHeader })
      expect(listed.status).toBe(200)
      const purged = await fetch(`${platform.url}/v2/${endpointId}/purge-queue`, {
        method: 'POST',
        headers: { ...jsonHeader, authorization: `Bearer ${TEST_ADMIN_KEY}` },
      })
      expect(purged.status).toBe(200)
    })

    it('a route whose body is required still refuses an empty one, as a validation error', async () => {
      const response = await platform.call('/v2/pods', { method: 'POST', headers: jsonHeader })
      const body = (await response.json()) as Json
      expect(response.status).toBe(422)
      expect(String(body.detail)).toContain('body')
    })

    it('a body that is only whitespace is no body too', async () => {
      const created = await json(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: { name: 'blank-body', image: 'busybox', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        }),
        201,
      )
      const deleted = await platform.call(`/v2/pods/${String(created.id)}`, {
        method: 'DELETE',
        headers: jsonHeader,
        body: '  \n',
      })
      expect(deleted.status).toBe(204)
    })
  })

  describe('job API errors carry a string `error` (the detail)', () => {
    const jobApi = (path: string, init: RequestInit = {}, key: string | null = TEST_ADMIN_KEY) =>
      fetch(`${platform.url}/v2/${path}`, {
        ...init,
        headers: {
          ...jsonHeader,
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
          ...(init.headers as Record<string, string> | undefined),
        },
      })
    const errorBody = async (response: Response, status: number) => {
      const body = (await response.json()) as Json
      expect(response.status, JSON.stringify(body)).toBe(status)
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
      expect(typeof body.error).toBe('string')
      expect(body.error).toBe(body.detail)
      expect(body).toMatchObject({ status, title: expect.any(String) })
      return body
    }

    it('400, 404 and 401 of an endpoint', async () => {
      const endpointId = await createTestEndpoint(platform, 'errors')
      const missingInput = await errorBody(
        await jobApi(`${endpointId}/run`, { method: 'POST', body: '{}' }),
        400,
      )
      expect(missingInput.error).toContain('input')
      await errorBody(await jobApi(`${endpointId}/status/no-such-job`), 404)
      await errorBody(await jobApi('zzzzzzzzzzzzzz/health'), 404)
      await errorBody(await jobApi(`${endpointId}/health`, {}, null), 401)
      await errorBody(await jobApi(`${endpointId}/health`, {}, 'pyd_wrong'), 401)
    })

    it('public models', async () => {
      const invalid = await errorBody(
        await jobApi('podyard-reference-image/runsync', {
          method: 'POST',
          body: JSON.stringify({ input: { prompt: 'x', width: 100 } }),
        }),
        400,
      )
      expect(invalid.error).toContain('input.width')
      await errorBody(await jobApi('podyard-reference-image/status/nope'), 404)
    })

    it('REST keeps plain problem+json', async () => {
      const body = (await (await platform.call('/v2/pods/nope')).json()) as Json
      expect(body).not.toHaveProperty('error')
      expect(body).toMatchObject({ status: 404 })
    })
  })
})
