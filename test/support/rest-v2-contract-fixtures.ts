import { expect } from 'vitest'
import type { TestPlatform } from './platform.js'

/** What the REST v2 contract suites (test/api/rest-v2-contract-*.test.ts) share. */

/** A JSON object as the suites read and send them. */
export type Json = Record<string, unknown>

/**
 * `call(method, path, body?, key?)`: a request to the suite's platform (read when called, so
 * that it can be started in a beforeAll), as the test key or `key`; `problem(response, status)`:
 * the problem+json answer, once its status is checked.
 */
export function contractCalls(platform: () => TestPlatform) {
  const call = (method: string, path: string, body?: unknown, key?: string) =>
    platform().call(path, {
      method,
      ...(body === undefined ? {} : { json: body }),
      ...(key ? { key } : {}),
    })
  const problem = async (response: Response, status: number) => {
    const body = (await response.json()) as { detail: string; errors?: string[] }
    expect(response.status, JSON.stringify(body)).toBe(status)
    return body
  }
  return { call, problem }
}
