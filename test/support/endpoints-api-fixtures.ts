import { expect } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from './platform.js'

/** An endpoint as the REST API shows it (the fields the endpoint tests read by name). */
export interface EndpointJson {
  id: string
  name: string
  version: number
  templateId: string | null
  [key: string]: unknown
}
export interface Problem {
  detail: string
  errors?: string[]
}

/** The body of an answer (undefined when empty), after checking its status. */
export async function ok<T = EndpointJson>(response: Response, status = 200): Promise<T> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  return (text ? JSON.parse(text) : undefined) as T
}

/** The problem an answer carries, after checking its status. */
export async function problem(response: Response, status: number): Promise<Problem> {
  const body = (await response.json()) as Problem
  expect(response.status, JSON.stringify(body)).toBe(status)
  return body
}

/** The smallest valid endpoint: a GPU endpoint of pool ADA_24 running `worker:1`. */
export const base = { name: 'ep', image: 'worker:1', gpu: { pools: ['ADA_24'] } }

/**
 * A platform of the endpoint tests, with the key of a second account (`endpoints-stranger`)
 * that must never see the test account's endpoints.
 */
export async function startEndpointsApiPlatform(): Promise<{
  platform: TestPlatform
  strangerKey: string
}> {
  const platform = await startTestPlatform()
  const strangerKey = await otherAccountKey(platform, 'endpoints-stranger@example.com')
  return { platform, strangerKey }
}

/**
 * Calls the endpoint tests make on the platform `platform()` answers (once their beforeAll has
 * started it): `call` sends a method and an optional JSON body, as the test account or with
 * `key`; `create` creates `base` with `body`'s fields over it and expects 201.
 */
export function endpointsApiCalls(platform: () => TestPlatform) {
  const call = (method: string, path: string, json?: unknown, key?: string) =>
    platform().call(path, {
      method,
      ...(json === undefined ? {} : { json }),
      ...(key ? { key } : {}),
    })
  const create = async (body: Record<string, unknown> = {}, key?: string) =>
    ok(await call('POST', '/v2/serverless', { ...base, ...body }, key), 201)
  return { call, create }
}
