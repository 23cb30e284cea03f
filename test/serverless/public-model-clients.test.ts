import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const IMAGE = 'podyard-reference-image'
const TEXT = 'podyard-reference-text'

/** The IHDR width and height of a PNG. */
function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(12, 16).toString('ascii')).toBe('IHDR')
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) }
}

/**
 * Public models called as RunPod's SDKs and OpenAI's clients call them, over real HTTP, with the reference workers running.
 */
describe('public models as clients call them', () => {
  let platform: TestPlatform
  let key: string

  const call = async (path: string, init: Parameters<TestPlatform['call']>[1] = {}) => {
    const response = await platform.call(path, { key, ...init })
    const text = await response.text()
    let body: Json = text
    try {
      body = JSON.parse(text)
    } catch {
      // server-sent events stay text
    }
    return { status: response.status, headers: response.headers, body }
  }
  const runsync = (input: unknown) =>
    call(`/v2/${IMAGE}/runsync`, { method: 'POST', json: { input } })
  const image = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer())

  beforeAll(async () => {
    platform = await startTestPlatform({
      workers: {
        intervalMs: 200,
        pingIntervalMs: 1000,
        heartbeatTimeoutMs: 10_000,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
        unhealthyRetentionMs: 1500,
      },
    })
    key = await otherAccountKey(platform, 'model-client@example.com')
    const me = (await call('/v2/account')).body
    const added = await platform.call(`/v2/admin/accounts/${me.id}/credits`, {
      method: 'POST',
      json: { amount: 5 },
    })
    expect(added.status).toBe(200)
  })
  afterAll(() => platform.close())

  describe('image models take what SDKs send by default', () => {
    it('size "768*512" and "640x384" set width and height; seed -1 is a random seed', async () => {
      const first = await runsync({ prompt: 'a lighthouse', seed: -1, size: '768*512' })
      expect(first.status, JSON.stringify(first.body)).toBe(200)
      expect(first.body.status).toBe('COMPLETED')
      const firstImage = await image(first.body.output.image_url)
      expect(pngSize(firstImage)).toEqual({ width: 768, height: 512 })
      const second = await runsync({ prompt: 'a lighthouse', seed: -1, size: '768*512' })
      // A random seed each time: the reference renderer's colours follow the seed.
      expect((await image(second.body.output.image_url)).equals(firstImage)).toBe(false)
      const x = await runsync({ prompt: 'a lighthouse', size: '640x384' })
      expect(pngSize(await image(x.body.output.image_url))).toEqual({ width: 640, height: 384 })
      // RunPod's AI SDK provider: its default size beside the caller's width and height.
      const sdk = await runsync({
        prompt: 'a lighthouse',
        size: '1328*1328',
        width: 640,
        height: 448,
      })
      expect(sdk.status, JSON.stringify(sdk.body)).toBe(200)
      expect(pngSize(await image(sdk.body.output.image_url))).toEqual({ width: 640, height: 448 })
    }, 60_000)

    it('invalid input is 400 with a string error', async () => {
      for (const input of [
        { prompt: 'x', size: 'huge' },
        { prompt: 'x', seed: -2 },
        { prompt: 'x', size: '768*512', width: 641 },
      ]) {
        const refused = await runsync(input)
        expect(refused.status, JSON.stringify(input)).toBe(400)
        expect(typeof refused.body.error).toBe('string')
        expect(refused.body.error).toBe(refused.body.detail)
      }
    })
  })

  describe('/v2/<model_id>/openai/v1/* for text models', () => {
    const openai = (path: string, json?: unknown) =>
      call(`/v2/${TEXT}/openai/v1${path}`, json === undefined ? {} : { method: 'POST', json })

    it('chat completions', async () => {
      const answer = await openai('/chat/completions', {
        model: TEXT,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello' }] }],
        max_tokens: 20,
      })
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body).toMatchObject({
        object: 'chat.completion',
        model: TEXT,
        choices: [{ index: 0, message: { role: 'assistant', content: expect.any(String) } }],
        usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) },
      })
      expect(answer.body.id).toMatch(/^chatcmpl-sync-/)
      expect(answer.headers.get('x-request-id')).toMatch(/^sync-/)
    }, 60_000)

    it('completions', async () => {
      const answer = await openai('/completions', { model: TEXT, prompt: 'Once', max_tokens: 10 })
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body).toMatchObject({
        object: 'text_completion',
        choices: [{ index: 0, text: expect.any(String) }],
      })
    }, 60_000)

    it('streaming, as server-sent events ending in [DONE]', async () => {
      const answer = await openai('/chat/completions', {
        messages: [{ role: 'user', content: 'Stream please' }],
        stream: true,
      })
      expect(answer.status).toBe(200)
      expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/)
      const events = (answer.body as string)
        .split('\n\n')
        .filter((e) => e.startsWith('data: '))
        .map((e) => e.slice('data: '.length))
      expect(events[events.length - 1]).toBe('[DONE]')
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Json)
      expect(chunks[0]).toMatchObject({
        object: 'chat.completion.chunk',
        choices: [{ delta: { role: 'assistant', content: expect.any(String) } }],
      })
      expect(chunks[chunks.length - 1].choices[0].finish_reason).toEqual(expect.any(String))
    }, 60_000)

    it('models', async () => {
      const listed = await openai('/models')
      expect(listed.status).toBe(200)
      expect(listed.body).toMatchObject({ object: 'list', data: [{ id: TEXT, object: 'model' }] })
    })

    it("refuses bad input in OpenAI's error shape; image models have no such route", async () => {
      const bad = await openai('/chat/completions', { messages: [] })
      expect(bad.status).toBe(400)
      expect(bad.body.error).toMatchObject({
        type: 'invalid_request_error',
        message: expect.stringContaining('input.messages'),
      })
      const none = await call(`/v2/${IMAGE}/openai/v1/chat/completions`, {
        method: 'POST',
        json: { messages: [{ role: 'user', content: 'x' }] },
      })
      expect(none.status).toBe(404)
    })
  })
})
