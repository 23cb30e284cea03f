import { expect } from 'vitest'
import { PodSchema } from '../../src/api/rest/pod-schemas.js'
import type { TestPlatform } from './platform.js'
import { conformanceTo } from './schema-conformance.js'

/**
 * What the REST pods tests (test/pods/pods-api-*.test.ts) share: the pod answer's shape, the GPU
 * types of the demo fleet they create on, and their calls on the platform.
 */

/** Every pod answer of these tests is checked against the documented schema, field by field. */
const podErrors = conformanceTo(PodSchema)
export function conforming<T>(pod: T): T {
  expect(podErrors(pod), JSON.stringify(pod)).toEqual([])
  return pod
}

export interface PodJson {
  id: string
  status: string
  actions: string[]
  cost: number
  dataCenterId: string | null
  statusReason: string | null
  startedAt: string | null
  runtime: null | {
    uptime: number
    gpus: unknown[]
    cpu: { util: number }
    memory: { util: number }
    ports: Array<{ private: number; public: number; type: string; ip: string }>
  }
  [key: string]: unknown
}

export const RTX_4090 = 'NVIDIA GeForce RTX 4090'
export const RTX_5090 = 'NVIDIA GeForce RTX 5090'

/** The pods calls on the platform `current` returns (a test file starts it in its beforeAll). */
export function podCalls(current: () => TestPlatform) {
  const post = (path: string, json: unknown, key?: string) =>
    current().call(path, { method: 'POST', json, ...(key ? { key } : {}) })
  const create = (body: Record<string, unknown>) =>
    post('/v2/pods', { name: 'p', image: 'ubuntu', ...body })
  async function created(body: Record<string, unknown>): Promise<PodJson> {
    const response = await create(body)
    expect(response.status, JSON.stringify(await response.clone().json())).toBe(201)
    return conforming((await response.json()) as PodJson)
  }
  const getPod = async (id: string) => {
    const response = await current().call(`/v2/pods/${id}`)
    const pod = (await response.json()) as PodJson
    return response.status === 200 ? conforming(pod) : pod
  }
  const terminate = (id: string) => current().call(`/v2/pods/${id}`, { method: 'DELETE' })
  const act = (id: string, action: string) => post(`/v2/pods/${id}/action`, { action })
  async function waitFor(id: string, status: string, timeoutMs = 20_000): Promise<PodJson> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const pod = await getPod(id)
      if (pod.status === status) return pod
      if (Date.now() > deadline)
        throw new Error(`pod ${id} is ${pod.status} (${pod.statusReason}), not ${status}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  async function availability(gpu: string): Promise<string> {
    const response = await current().call(`/v2/catalog/gpus/${encodeURIComponent(gpu)}`)
    return ((await response.json()) as { availability: string }).availability
  }
  async function problem(response: Response, status: number) {
    const body = (await response.json()) as { detail: string; errors?: string[] }
    expect(response.status, JSON.stringify(body)).toBe(status)
    return body
  }
  return { create, created, getPod, terminate, act, waitFor, availability, problem }
}
