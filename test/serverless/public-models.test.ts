import { readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nanoToUsd } from '../../src/domain/billing/credits.js'
import { maxPriceNano } from '../../src/domain/models/model.js'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * Public model endpoints (docs/public-endpoints.md) over real HTTP: the platform's
 * autoscaler runs the reference model workers (dist/models/reference-worker.js) as real
 * processes, sandboxed when bubblewrap works here; the text adapter calls a tiny in-test
 * OpenAI-compatible server.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const IMAGE = 'podyard-reference-image'
const TEXT = 'podyard-reference-text'
const ECHO = 'test-echo-text'
const DAY_MS = 24 * 60 * 60 * 1000

/** Real time plus an offset the test moves: everything keeps running, and 7 days pass at once. */
const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) }

/** The IHDR width and height of a PNG. */
function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(0, 8)).toEqual(
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  )
  expect(bytes.subarray(12, 16).toString('ascii')).toBe('IHDR')
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) }
}

describe('public model endpoints', () => {
  let platform: TestPlatform
  let modelServer: Server
  const serverCalls: Json[] = []
  let caller: { key: string; id: string }
  let stranger: { key: string; id: string }

  const call = async (pathAndQuery: string, init: Parameters<TestPlatform['call']>[1] = {}) => {
    const response = await platform.call(pathAndQuery, init)
    const text = await response.text()
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      body: (text === '' ? null : JSON.parse(text)) as Json,
    }
  }

  async function account(email: string) {
    const key = await otherAccountKey(platform, email)
    const me = await call('/v2/account', { key })
    return { key, id: me.body.id as string }
  }

  const balance = async (key: string) => (await call('/v2/account', { key })).body.balance as number

  const addCredits = async (accountId: string, amount: number) => {
    const added = await call(`/v2/admin/accounts/${accountId}/credits`, {
      method: 'POST',
      json: { amount },
    })
    expect(added.status, JSON.stringify(added.body)).toBe(200)
  }

  const runsync = (model: string, input: unknown, key: string) =>
    call(`/v2/${model}/runsync`, { method: 'POST', json: { input }, key })

  beforeAll(async () => {
    modelServer = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk.toString()))
      request.on('end', () => {
        serverCalls.push({
          url: request.url,
          auth: request.headers.authorization,
          body: JSON.parse(body),
        })
        response.setHeader('content-type', 'application/json')
        response.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'echo from the server' },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 30, completion_tokens: 70, total_tokens: 100 },
          }),
        )
      })
    })
    await new Promise<void>((resolve) => modelServer.listen(0, '127.0.0.1', resolve))
    const serverUrl = `http://127.0.0.1:${(modelServer.address() as AddressInfo).port}/v1`
    platform = await startTestPlatform(
      {
        workers: {
          intervalMs: 200,
          pingIntervalMs: 1000,
          heartbeatTimeoutMs: 10_000,
          startTimeoutMs: 30_000,
          stopGraceMs: 2000,
          unhealthyRetentionMs: 1500,
        },
        models: {
          definitions: {
            [ECHO]: {
              kind: 'text',
              name: 'echo through an OpenAI-compatible server',
              price: { unit: '1k-tokens', usd: 0.01 },
              server: { url: serverUrl, model: 'echo-1', apiKey: 'server-secret' },
            },
          },
        },
      },
      { clock },
    )
    caller = await account('caller@example.com')
    stranger = await account('stranger@example.com')
  })

  afterAll(async () => {
    await platform?.close()
    await new Promise((resolve) => modelServer?.close(resolve))
  })

  it('lists the models in the catalog, without their endpoints', async () => {
    const listed = await call('/v2/catalog/models', { key: caller.key })
    expect(listed.status).toBe(200)
    const byId = new Map((listed.body as Json[]).map((m) => [m.id, m]))
    expect(byId.get(IMAGE)).toMatchObject({
      kind: 'image',
      reference: true,
      price: { unit: 'megapixel', usd: 0.0024 },
      input: { required: ['prompt'] },
    })
    expect(byId.get(TEXT)).toMatchObject({ kind: 'text', price: { unit: '1k-tokens' } })
    expect(byId.get(ECHO)).toMatchObject({ kind: 'text', reference: false })
    for (const model of listed.body as Json[]) {
      expect(Object.keys(model).sort()).toEqual([
        'description',
        'id',
        'input',
        'kind',
        'name',
        'price',
        'reference',
      ])
    }
    expect(JSON.stringify(listed.body)).not.toMatch(/server-secret|127\.0\.0\.1/)
    // Callers never see the platform's model endpoints.
    const own = await call('/v2/serverless', { key: caller.key })
    expect(JSON.stringify(own.body)).not.toMatch(/podyard-reference|test-echo/)
  })

  it('refuses bad input with 400 naming each failing field, before pricing', async () => {
    const bad = await runsync(IMAGE, { width: 100, height: 4096 }, caller.key)
    expect(bad.status).toBe(400)
    expect(bad.type).toMatch(/application\/problem\+json/)
    expect(bad.body.errors).toEqual([
      'input.prompt: required',
      'input.width: must be a multiple of 8, got 100',
      'input.height: must be between 64 and 2048, got 4096',
    ])
    expect(
      (await runsync(IMAGE, { prompt: 'x', width: 63, height: 2056 }, caller.key)).body.errors,
    ).toEqual([
      'input.width: must be between 64 and 2048, got 63',
      'input.width: must be a multiple of 8, got 63',
      'input.height: must be between 64 and 2048, got 2056',
    ])
    const notInt = await runsync(IMAGE, { prompt: 'x', width: 64.5, height: '64' }, caller.key)
    expect(notInt.status).toBe(400)
    expect(notInt.body.errors).toEqual([
      'input.width: must be an integer, got 64.5',
      'input.height: must be an integer, got "64"',
    ])
    expect((await runsync(IMAGE, { prompt: 7 }, caller.key)).body.errors).toEqual([
      'input.prompt: must be a string',
    ])
    expect((await runsync(TEXT, { max_tokens: 0 }, caller.key)).status).toBe(400)
  })

  it('refuses a job the balance cannot cover with 402, naming price and balance', async () => {
    const refused = await runsync(
      IMAGE,
      { prompt: 'a red fox', width: 512, height: 512 },
      caller.key,
    )
    expect(refused.status).toBe(402)
    expect(refused.type).toMatch(/application\/problem\+json/)
    const price = nanoToUsd(
      maxPriceNano(
        { unit: 'megapixel', usd: 0.0024 },
        { kind: 'image', prompt: 'a red fox', width: 512, height: 512 },
      ),
    )
    expect(price).toBe(0.000629)
    expect(refused.body.detail).toMatch(/costs up to \$0\.000629 .* is \$0\.000000/)
    expect(refused.body.errors).toEqual(['price: 0.000629 USD', 'balance: 0 USD'])
  })

  let imageJob: { id: string; url: string }

  it('runs an image job: a signed URL of a PNG of the asked size, cost charged', async () => {
    await addCredits(caller.id, 1)
    const before = await balance(caller.key)
    const input = { prompt: 'A lighthouse at dusk, 35mm', width: 256, height: 128 }
    const done = await runsync(IMAGE, input, caller.key)
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    const expectedCost = nanoToUsd(
      maxPriceNano({ unit: 'megapixel', usd: 0.0024 }, { kind: 'image', ...input }),
    )
    expect(done.body).toMatchObject({
      status: 'COMPLETED',
      output: { cost: expectedCost },
    })
    expect(done.body.id).toMatch(/^sync-/)
    expect(done.body).toHaveProperty('delayTime')
    expect(done.body).toHaveProperty('executionTime')
    expect(Object.keys(done.body.output).sort()).toEqual(['cost', 'image_url'])
    const url = done.body.output.image_url as string
    expect(url.startsWith(`${platform.url}/v2/objects/images/${done.body.id}.png?expires=`)).toBe(
      true,
    )
    imageJob = { id: done.body.id, url }
    // The worker ran podyard's build read-only mounted into it: inside bubblewrap when it works here.
    const probe = await probeBubblewrap({
      searchPath: process.env.PATH,
      probeUid: DEFAULT_SANDBOX_UID_BASE,
    })
    const states = readdirSync(path.join(platform.dataDir, '.podyard', 'runtime', 'process')).map(
      (id) =>
        JSON.parse(
          readFileSync(
            path.join(platform.dataDir, '.podyard', 'runtime', 'process', id, 'state.json'),
            'utf8',
          ),
        ) as Json,
    )
    expect(states.length).toBeGreaterThan(0)
    for (const state of states) {
      expect(state.sandbox).toBe(probe.ok ? 'bubblewrap' : 'none')
      expect(state.spec.mounts).toEqual([
        expect.objectContaining({ containerPath: '/opt/podyard', readOnly: true }),
      ])
    }

    const image = await fetch(url)
    expect(image.status).toBe(200)
    expect(image.headers.get('content-type')).toBe('image/png')
    expect(pngSize(Buffer.from(await image.arrayBuffer()))).toEqual({ width: 256, height: 128 })

    const after = await balance(caller.key)
    expect(after).toBeCloseTo(before - expectedCost, 6)
    // The same job read again is not charged twice.
    const again = await call(`/v2/${IMAGE}/status/${done.body.id}`, { key: caller.key })
    expect(again.body).toMatchObject({ status: 'COMPLETED', output: { image_url: url } })
    expect(await balance(caller.key)).toBe(after)
  })

  it("keeps a caller's jobs to the caller: another account gets 404", async () => {
    for (const path of [`status/${imageJob.id}`, `stream/${imageJob.id}`]) {
      const read = await call(`/v2/${IMAGE}/${path}`, { key: stranger.key })
      expect(read.status).toBe(404)
    }
    const cancel = await call(`/v2/${IMAGE}/cancel/${imageJob.id}`, {
      method: 'POST',
      key: stranger.key,
    })
    expect(cancel.status).toBe(404)
    // Nor is the model endpoint reachable by its id through the job API.
    expect((await call(`/v2/${TEXT}/health`, { key: caller.key })).status).toBe(404)
  })

  it('refuses a tampered or unsigned URL with 403', async () => {
    const tampered = imageJob.url.replace(/signature=./, (s) =>
      s.endsWith('A') ? `${s.slice(0, -1)}B` : `${s.slice(0, -1)}A`,
    )
    const forbidden = await fetch(tampered)
    expect(forbidden.status).toBe(403)
    expect(forbidden.headers.get('content-type')).toMatch(/application\/problem\+json/)
    const later = new URL(imageJob.url)
    later.searchParams.set('expires', String(Number(later.searchParams.get('expires')) + 3600))
    expect((await fetch(later)).status).toBe(403)
    expect((await fetch(imageJob.url.split('?')[0]!)).status).toBe(403)
  })

  it('runs the reference text model through /run and /status, charged by its tokens', async () => {
    const before = await balance(caller.key)
    const queued = await call(`/v2/${TEXT}/run`, {
      method: 'POST',
      json: { input: { prompt: 'Say something about rivers', max_tokens: 64 } },
      key: caller.key,
    })
    expect(queued.status).toBe(200)
    expect(queued.body.status).toBe('IN_QUEUE')
    const done = await call(`/v2/${TEXT}/status-sync/${queued.body.id}?wait=60000`, {
      key: caller.key,
    })
    expect(done.body.status, JSON.stringify(done.body)).toBe('COMPLETED')
    const { output } = done.body
    expect(output.text).toMatch(/^Reference answer to "Say something about rivers":/)
    expect(output.choices[0].message).toEqual({ role: 'assistant', content: output.text })
    const tokens = output.usage.prompt_tokens + output.usage.completion_tokens
    expect(output.usage.completion_tokens).toBeLessThanOrEqual(64)
    expect(output.cost).toBe(nanoToUsd(Math.ceil((200_000 * tokens) / 1000)))
    expect(await balance(caller.key)).toBeCloseTo(before - output.cost, 6)
    // Deterministic: the same prompt, the same answer.
    const again = await runsync(
      TEXT,
      { prompt: 'Say something about rivers', max_tokens: 64 },
      caller.key,
    )
    expect(again.body.output.text).toBe(output.text)
  })

  it('backs a model with an OpenAI-compatible server (the text adapter)', async () => {
    const done = await runsync(
      ECHO,
      { messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 },
      caller.key,
    )
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect(done.body.output).toMatchObject({
      text: 'echo from the server',
      usage: { prompt_tokens: 30, completion_tokens: 70 },
      cost: 0.001,
    })
    expect(serverCalls.at(-1)).toMatchObject({
      url: '/v1/chat/completions',
      auth: 'Bearer server-secret',
      body: { model: 'echo-1', messages: [{ role: 'user', content: 'hello' }], max_tokens: 100 },
    })
  })

  it('answers 410 Gone once the image URL is 7 days old', async () => {
    clock.offsetMs = 7 * DAY_MS - 60_000
    expect((await fetch(imageJob.url)).status).toBe(200)
    clock.offsetMs = 7 * DAY_MS + 1000
    const gone = await fetch(imageJob.url)
    expect(gone.status).toBe(410)
    expect(gone.headers.get('content-type')).toMatch(/application\/problem\+json/)
    expect(((await gone.json()) as Json).detail).toMatch(/expired/)
  })
})
