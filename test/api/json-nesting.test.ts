import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH } from '../../src/shared/json-depth.js'
import { TOO_DEEP_JOB_ERROR } from '../../src/api/worker/worker-routes.js'
import { createTestEndpoint, json } from '../support/http.js'
import { TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'

/**
 * JSON nested past MAX_JSON_DEPTH (docs/api.md, "Nesting") is refused with 400 on every route
 * that reads JSON, before anything is stored; a worker's result nested too deep ends its job
 * FAILED instead of a 500 and a re-run.
 */

type Json = Record<string, unknown>

/** A JSON value `depth` levels deep: arrays around a number. */
const nested = (depth: number) => '['.repeat(depth) + '1' + ']'.repeat(depth)
/** 5 000 levels: what overflowed the serializers' stack. */
const DEEP = nested(5_000)

async function problem(response: Response, status = 400): Promise<Json & { detail: string }> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return JSON.parse(text) as Json & { detail: string }
}

const workerPost = (platform: TestPlatform, path: string, body: string) =>
  fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { authorization: TEST_ADMIN_KEY, 'content-type': 'application/x-www-form-urlencoded' },
    body,
  })

describe.each(platformStores())('JSON nesting on $name', (store) => {
  let platform: TestPlatform
  let endpointId: string

  beforeAll(async () => {
    platform = await store.start()
    endpointId = await createTestEndpoint(platform, 'nesting')
  })
  afterAll(() => platform?.close())

  const run = (body: string, path = 'run') =>
    platform.call(`/v2/${endpointId}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })

  /** A job of the endpoint taken by a worker `workerId`; its id. */
  async function takenJob(workerId: string): Promise<string> {
    const queued = await json<{ id: string }>(await run('{"input":{"n":1}}'))
    const taken = await json<Json>(
      await fetch(`${platform.url}/v2/${endpointId}/job-take/${workerId}?wait=0`, {
        headers: { authorization: TEST_ADMIN_KEY },
      }),
    )
    expect(taken.id).toBe(queued.id)
    return queued.id
  }

  const status = async (jobId: string) =>
    json<Json>(await platform.call(`/v2/${endpointId}/status/${jobId}`))

  it('/run and /runsync take a body nested 256 levels deep and refuse 257 with 400', async () => {
    // The body's own object and `input` are two of the levels.
    const within = `{"input":{"v":${nested(MAX_JSON_DEPTH - 2)}}}`
    expect((await run(within)).status).toBe(200)
    const past = await problem(await run(`{"input":{"v":${nested(MAX_JSON_DEPTH - 1)}}}`))
    expect(past.detail).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`)
    for (const path of ['run', 'runsync']) {
      const refused = await problem(await run(`{"input":{"v":${DEEP}}}`, path))
      expect(refused.errors).toEqual([
        `body: arrays and objects are nested deeper than ${MAX_JSON_DEPTH} levels; the limit is ${MAX_JSON_DEPTH}`,
      ])
    }
    const health = await json<{ jobs: Json }>(await platform.call(`/v2/${endpointId}/health`))
    expect(health.jobs.inQueue).toBe(1)
    await platform.call(`/v2/${endpointId}/purge-queue`, { method: 'POST' })
  })

  it('the REST API refuses a deep body with 400 before validating it', async () => {
    const refused = await problem(
      await platform.call('/v2/templates', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"name":"t","image":"i","env":${DEEP}}`,
      }),
    )
    expect(refused.detail).toContain('nested deeper than 256 levels')
  })

  it('GraphQL refuses deep variables, posted or in the query string, and extensions, with errors[]', async () => {
    const query = 'query ($x: String) { myself { id } }'
    const posted = await platform.call('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":${JSON.stringify(query)},"variables":{"x":${DEEP}}}`,
    })
    expect(posted.status).toBe(400)
    const postedBody = (await posted.json()) as { errors: Array<{ message: string }> }
    expect(postedBody.errors[0]!.message).toContain('nested deeper than 256 levels')

    const got = await platform.call(
      `/graphql?query=${encodeURIComponent('{ myself { id } }')}&variables=${encodeURIComponent(`{"a":${nested(300)}}`)}`,
    )
    expect(got.status).toBe(400)
    const gotBody = (await got.json()) as { data: null; errors: Array<{ message: string }> }
    expect(gotBody.errors[0]!.message).toContain('variables: arrays and objects are nested deeper')
    const extensions = await platform.call(
      `/graphql?query=${encodeURIComponent('{ myself { id } }')}&extensions=${encodeURIComponent(`{"a":${nested(300)}}`)}`,
    )
    expect(extensions.status).toBe(400)
  })

  it('the OpenAI route and public models refuse a deep body with 400', async () => {
    const openai = await platform.call(`/v2/${endpointId}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"model":"m","messages":${DEEP}}`,
    })
    expect(openai.status).toBe(400)
    // OpenAI's clients read OpenAI's error shape on this route.
    const openaiBody = (await openai.json()) as { error: { message: string } }
    expect(openaiBody.error.message).toContain('nested deeper than 256 levels')

    const model = await platform.call('/v2/podyard-reference-image/run', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"input":{"prompt":${DEEP}}}`,
    })
    expect((await problem(model)).detail).toContain('nested deeper than 256 levels')
  })

  it('a job-done nested too deep ends the job FAILED and tells the worker why', async () => {
    const jobId = await takenJob('w-deep')
    const path = `/v2/${endpointId}/job-done/w-deep/${jobId}`
    const refused = await problem(await workerPost(platform, path, `{"output":${DEEP}}`))
    expect(refused.detail).toContain(`the result of job ${jobId} is nested deeper than 256 levels`)
    expect(refused.detail).toContain('the job was ended FAILED')
    const failed = await status(jobId)
    expect(failed).toMatchObject({ status: 'FAILED', error: TOO_DEEP_JOB_ERROR })
    expect(failed.output).toBeUndefined()

    // The worker's retry gets the same refusal; the job stays FAILED, never re-run.
    const again = await problem(await workerPost(platform, path, `{"output":${DEEP}}`))
    expect(again.detail).toContain('it was not recorded (not-in-progress)')
    expect((await status(jobId)).status).toBe('FAILED')
    const retake = await fetch(`${platform.url}/v2/${endpointId}/job-take/w-deep?wait=0`, {
      headers: { authorization: TEST_ADMIN_KEY },
    })
    expect(retake.status).toBe(204)
  })

  it('job-done-batch records the results within the bound and fails the deep ones', async () => {
    const fine = await takenJob('w-batch')
    const deep = await takenJob('w-batch')
    const refused = await problem(
      await workerPost(
        platform,
        `/v2/${endpointId}/job-done-batch/w-batch`,
        `[{"id":"${fine}","output":{"ok":[1]}},{"id":"${deep}","output":${DEEP}}]`,
      ),
    )
    expect(refused.errors).toEqual([
      `body[1]: the result of job ${deep} is nested deeper than 256 levels; the limit is 256: the job was ended FAILED with that error`,
    ])
    expect(refused.detail).toContain('the others were recorded')
    expect(await status(fine)).toMatchObject({ status: 'COMPLETED', output: { ok: [1] } })
    expect(await status(deep)).toMatchObject({ status: 'FAILED', error: TOO_DEEP_JOB_ERROR })
  })

  it('job-stream refuses a deep chunk with 400 and the job keeps running', async () => {
    const jobId = await takenJob('w-stream')
    const refused = await problem(
      await workerPost(
        platform,
        `/v2/${endpointId}/job-stream/w-stream/${jobId}`,
        `{"output":${DEEP}}`,
      ),
    )
    expect(refused.detail).toContain('nested deeper than 256 levels')
    expect((await status(jobId)).status).toBe('IN_PROGRESS')
    const done = await workerPost(
      platform,
      `/v2/${endpointId}/job-done/w-stream/${jobId}`,
      '{"output":"fine"}',
    )
    expect(await json(done)).toEqual({ status: 'ok' })
  })
})
