import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { createTestEndpoint, json } from '../support/http.js'

interface WorkerKeyJson {
  endpointId: string
  workerKey: string
  generation: number
}

describe('per-endpoint worker keys', () => {
  let platform: TestPlatform
  const logLines: string[] = []
  let a: string
  let b: string

  const createEndpoint = (name: string) => createTestEndpoint(platform, name)
  const readKey = async (id: string) =>
    json<WorkerKeyJson>(await platform.call(`/v2/serverless/${id}/worker-key`))
  /** A worker call as runpod-python makes it: the key raw in Authorization. */
  const worker = (endpointId: string, key: string, path: string, init: RequestInit = {}) =>
    fetch(`${platform.url}/v2/${endpointId}/${path}`, {
      ...init,
      headers: {
        authorization: key,
        'content-type': 'application/x-www-form-urlencoded',
        ...(init.headers as Record<string, string> | undefined),
      },
    })
  const take = (endpointId: string, key: string, workerId = 'w1') =>
    worker(endpointId, key, `job-take/${workerId}?gpu=any&wait=0&job_in_progress=0`)

  beforeAll(async () => {
    const logger = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) })
    platform = await startTestPlatform({}, { logger })
    a = await createEndpoint('a')
    b = await createEndpoint('b')
  })
  afterAll(() => platform.close())

  it('reads a stable key per endpoint, named by it, never in the endpoint list or get', async () => {
    const key = await readKey(a)
    expect(key).toEqual({
      endpointId: a,
      workerKey: expect.stringMatching(new RegExp(`^pydw_${a}_[A-Za-z0-9_-]{43}$`)),
      generation: 1,
    })
    expect((await readKey(a)).workerKey).toBe(key.workerKey)
    expect((await readKey(b)).workerKey).not.toBe(key.workerKey)
    const list = await (await platform.call('/v2/serverless')).text()
    const one = await (await platform.call(`/v2/serverless/${a}`)).text()
    expect(list).toContain(a)
    for (const text of [list, one]) {
      expect(text).not.toContain(key.workerKey)
      expect(text).not.toContain('pydw_')
    }
  })

  it('authenticates the worker protocol of its endpoint, raw or Bearer', async () => {
    const { workerKey } = await readKey(a)
    const run = await json<{ id: string }>(
      await platform.call(`/v2/${a}/run`, { method: 'POST', json: { input: { n: 1 } } }),
    )
    const taken = await json<{ id: string; input: unknown }>(await take(a, workerKey))
    expect(taken).toEqual({ id: run.id, input: { n: 1 } })
    expect(
      await json(
        await worker(a, `Bearer ${workerKey}`, `ping/w1?job_id=${run.id}&runpod_version=1.12.0`),
      ),
    ).toEqual({ status: 'ok', renewed: [run.id], leaseMs: 60_000 })
    await json(
      await worker(a, workerKey, `job-stream/w1/${run.id}?gpu=any&isStream=false`, {
        method: 'POST',
        body: JSON.stringify({ output: 'chunk' }),
      }),
    )
    expect(
      await json(
        await worker(a, workerKey, `job-done/w1/${run.id}?gpu=any&isStream=false`, {
          method: 'POST',
          body: JSON.stringify({ output: { ok: true } }),
        }),
      ),
    ).toEqual({ status: 'ok' })
    expect((await worker(a, workerKey, 'job-stop/w1?gpu=any&wait=0')).status).toBe(204)
    expect(await json(await platform.call(`/v2/${a}/status/${run.id}`))).toMatchObject({
      status: 'COMPLETED',
      output: { ok: true },
      workerId: 'w1',
    })
  })

  it("is refused on another endpoint's worker routes (403), and by the job API, REST and GraphQL (401)", async () => {
    const { workerKey } = await readKey(a)
    const other = await json(await take(b, workerKey), 403)
    expect(other.detail).toBe(
      `this worker key belongs to endpoint ${a}: it cannot be used for endpoint ${b}`,
    )
    const elsewhere = [
      fetch(`${platform.url}/v2/${a}/run`, {
        method: 'POST',
        headers: { authorization: workerKey, 'content-type': 'application/json' },
        body: JSON.stringify({ input: {} }),
      }),
      fetch(`${platform.url}/v2/${a}/health`, { headers: { authorization: workerKey } }),
      fetch(`${platform.url}/v2/${a}/status/x`, {
        headers: { authorization: `Bearer ${workerKey}` },
      }),
      platform.call('/v2/serverless', { key: workerKey }),
      platform.call(`/v2/serverless/${a}/worker-key`, { key: workerKey }),
      platform.call('/v2/pods', { key: workerKey }),
    ]
    for (const response of await Promise.all(elsewhere)) {
      const body = await json(response, 401)
      expect(body.detail).toMatch(/^this is an endpoint worker key: it authenticates only/)
    }
    const graphql = await platform.call('/graphql', {
      key: workerKey,
      method: 'POST',
      json: { query: '{ myself { id } }' },
    })
    expect(await graphql.text()).not.toMatch(/"myself":\{"id"/)
  })

  it('keeps accepting account API keys on the worker routes', async () => {
    expect((await take(a, TEST_ADMIN_KEY)).status).toBe(204)
    const restricted = await json<{ key: string }>(
      await platform.call('/v2/account/api-keys', {
        method: 'POST',
        json: { name: 'worker', permission: 'RESTRICTED', endpoints: [a] },
      }),
      201,
    )
    expect((await take(a, restricted.key)).status).toBe(204)
    await json(await take(b, restricted.key), 403)
  })

  it('is read and rotated by read-write keys of the owner only', async () => {
    const readOnly = await json<{ key: string }>(
      await platform.call('/v2/account/api-keys', {
        method: 'POST',
        json: { name: 'ro', permission: 'READ_ONLY' },
      }),
      201,
    )
    const refused = await json(
      await platform.call(`/v2/serverless/${a}/worker-key`, { key: readOnly.key }),
      403,
    )
    expect(refused.detail).toMatch(/needs a read-write API key/)
    await json(
      await platform.call(`/v2/serverless/${a}/worker-key/rotate`, {
        key: readOnly.key,
        method: 'POST',
      }),
      403,
    )
    const stranger = await otherAccountKey(platform, 'worker-keys-stranger@example.com')
    await json(await platform.call(`/v2/serverless/${a}/worker-key`, { key: stranger }), 404)
    await json(
      await platform.call(`/v2/serverless/${a}/worker-key/rotate`, {
        key: stranger,
        method: 'POST',
      }),
      404,
    )
    await json(await platform.call('/v2/serverless/nosuchendpoint/worker-key'), 404)
  })

  it('rotation invalidates the old key at once; an endpoint update does not undo it', async () => {
    const before = await readKey(b)
    const rotated = await json<WorkerKeyJson>(
      await platform.call(`/v2/serverless/${b}/worker-key/rotate`, { method: 'POST' }),
    )
    expect(rotated.generation).toBe(before.generation + 1)
    expect(rotated.workerKey).not.toBe(before.workerKey)
    const stale = await json(await take(b, before.workerKey), 401)
    expect(stale.detail).toMatch(/^the worker key is not valid: it was rotated/)
    expect((await take(b, rotated.workerKey)).status).toBe(204)
    await json(
      await platform.call(`/v2/serverless/${b}`, { method: 'PATCH', json: { name: 'b2' } }),
    )
    expect(await readKey(b)).toEqual(rotated)
    expect((await take(b, before.workerKey)).status).toBe(401)
  })

  it('documents the worker-key routes in the OpenAPI document', async () => {
    const doc = await json<{
      paths: Record<string, Record<string, { operationId?: string }>>
    }>(await platform.call('/v2/openapi.json'))
    expect(doc.paths['/v2/serverless/{id}/worker-key']?.get?.operationId).toBe(
      'getEndpointWorkerKey',
    )
    expect(doc.paths['/v2/serverless/{id}/worker-key/rotate']?.post?.operationId).toBe(
      'rotateEndpointWorkerKey',
    )
  })

  it('never writes a worker key to the logs', async () => {
    const keys = [(await readKey(a)).workerKey, (await readKey(b)).workerKey]
    await take(a, `${keys[0]!.slice(0, -1)}x`)
    const logs = logLines.join('')
    expect(logs).toContain('/worker-key')
    expect(logs).toContain('job-take')
    for (const key of keys) expect(logs).not.toContain(key.slice(20))
    expect(logs).not.toContain('pydw_')
  })
})

describe('worker keys across restarts', () => {
  it('are the same after a restart on the same store and encryption key', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-worker-keys-'))
    const config = {
      dataDir: dir,
      storeUrl: `sqlite:${path.join(dir, 'podyard.db')}`,
      encryptionKey: randomBytes(32).toString('base64'),
    }
    try {
      const first = await startTestPlatform(config)
      let id: string
      let key: string
      try {
        id = (
          await json<{ id: string }>(
            await first.call('/v2/serverless', {
              method: 'POST',
              json: { name: 'kept', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
            }),
            201,
          )
        ).id
        key = (await json<WorkerKeyJson>(await first.call(`/v2/serverless/${id}/worker-key`)))
          .workerKey
      } finally {
        await first.close()
      }
      const second = await startTestPlatform(config)
      try {
        expect(
          (await json<WorkerKeyJson>(await second.call(`/v2/serverless/${id}/worker-key`)))
            .workerKey,
        ).toBe(key)
        const take = await fetch(
          `${second.url}/v2/${id}/job-take/w1?gpu=any&wait=0&job_in_progress=0`,
          { headers: { authorization: key } },
        )
        expect(take.status).toBe(204)
      } finally {
        await second.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
