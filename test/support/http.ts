import { expect } from 'vitest'
import { callPlatform, type TestPlatform } from './platform.js'

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

/** The newest `tail` lines of a pod's log (`source` container or system), from its SSE history. */
export async function podLog(
  call: (p: string) => Promise<Response>,
  id: string,
  source: 'container' | 'system' = 'container',
  tail = 5000,
): Promise<string[]> {
  const text = await (
    await call(`/v2/pods/${id}/logs?source=${source}&follow=false&tail=${tail}`)
  ).text()
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => (JSON.parse(line.slice('data: '.length)) as { line: string }).line)
}

/** One event of a log's SSE history: its id (`<time>/<seq>`), its source and its line. */
export interface LogEvent {
  id: string
  source: string
  line: string
}

/** The events of a log answer read whole (`follow=false`). */
export function logEvents(text: string): LogEvent[] {
  return text
    .trim()
    .split('\n\n')
    .filter((block) => block.startsWith('id: '))
    .map((block) => {
      const [idLine, dataLine] = block.split('\n')
      const data = JSON.parse(dataLine!.slice('data: '.length)) as { source: string; line: string }
      return { id: idLine!.slice('id: '.length), source: data.source, line: data.line }
    })
}

/**
 * A caller of `baseUrl` as the account of `key`: a GET, or a POST of `json`; the answer's
 * status and body, parsed as JSON where it is JSON (a log's server-sent events stay text).
 */
export function accountCaller(baseUrl: () => string) {
  return async (key: string, pathAndQuery: string, json?: unknown) => {
    const response = await callPlatform(baseUrl(), pathAndQuery, {
      key,
      ...(json === undefined ? {} : { method: 'POST', json }),
    })
    const text = await response.text()
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    let body: any = text
    try {
      body = JSON.parse(text)
    } catch {
      // logs: server-sent events
    }
    return { status: response.status, body }
  }
}

/** The newest 200 lines of a pod's container log, read as the account of `key`. */
export function accountPodLog(baseUrl: () => string) {
  return (key: string, id: string): Promise<string[]> =>
    podLog((p) => callPlatform(baseUrl(), p, { key }), id, 'container', 200)
}
