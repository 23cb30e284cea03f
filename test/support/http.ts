import { expect } from 'vitest'
import type { TestPlatform } from './platform.js'

/** The body of a response as JSON, after checking its status (the body is in the message). */
export async function json<T = Record<string, unknown>>(
  response: Response,
  status = 200,
): Promise<T> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  return JSON.parse(text) as T
}

/**
 * A queue endpoint of the test account with nothing to run (GPU pool ADA_24, no workers):
 * jobs wait until the test's own worker takes them.
 */
export async function createTestEndpoint(
  platform: TestPlatform,
  name = 'ep',
  image = 'worker:1',
): Promise<string> {
  const created = await json<{ id: string }>(
    await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name, image, gpu: { pools: ['ADA_24'] } },
    }),
    201,
  )
  return created.id
}
