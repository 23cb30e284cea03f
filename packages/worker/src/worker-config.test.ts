import { describe, expect, it } from 'vitest'
import { resolveConnection, withQuery, WorkerConfigError } from './worker-config.js'

const B = 'http://127.0.0.1:8080/v2/ep1'

describe('resolveConnection', () => {
  it('reads the environment runpod-python reads, substituting as it does', () => {
    const connection = resolveConnection({
      env: {
        RUNPOD_WEBHOOK_GET_JOB: `${B}/job-take/$ID?gpu=any`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${B}/job-done/$RUNPOD_POD_ID/$ID?gpu=any`,
        RUNPOD_WEBHOOK_POST_STREAM: `${B}/job-stream/$RUNPOD_POD_ID/$ID?gpu=any`,
        RUNPOD_WEBHOOK_PING: `${B}/ping/$RUNPOD_POD_ID`,
        RUNPOD_AI_API_KEY: 'key-1',
        RUNPOD_POD_ID: 'w1',
        RUNPOD_PING_INTERVAL: '2500',
      },
    })
    expect(connection).toEqual({
      workerId: 'w1',
      apiKey: 'key-1',
      takeUrl: `${B}/job-take/w1?gpu=any`,
      doneUrl: `${B}/job-done/w1/$ID?gpu=any`,
      streamUrl: `${B}/job-stream/w1/$ID?gpu=any`,
      pingUrl: `${B}/ping/w1`,
      pingIntervalMs: 2500,
    })
  })

  it('leaves $RUNPOD_POD_ID in the take URL as runpod-python does (it substitutes only $ID)', () => {
    const connection = resolveConnection({
      env: {
        RUNPOD_WEBHOOK_GET_JOB: `${B}/job-take/$RUNPOD_POD_ID?gpu=any`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${B}/job-done/$RUNPOD_POD_ID/$ID?gpu=any`,
        RUNPOD_AI_API_KEY: 'k',
        RUNPOD_POD_ID: 'w1',
      },
    })
    expect(connection.takeUrl).toBe(`${B}/job-take/$RUNPOD_POD_ID?gpu=any`)
    expect(connection.streamUrl).toBeUndefined()
    expect(connection.pingUrl).toBeUndefined()
    expect(connection.pingIntervalMs).toBe(10_000)
  })

  it('derives the URLs from endpointUrl; explicit options win over the environment', () => {
    const connection = resolveConnection({
      endpointUrl: `${B}/`,
      apiKey: 'explicit',
      workerId: 'w2',
      pingIntervalMs: 100,
      env: {
        RUNPOD_WEBHOOK_GET_JOB: 'http://elsewhere/job-take/$ID?x=1',
        RUNPOD_AI_API_KEY: 'env',
      },
    })
    expect(connection).toEqual({
      workerId: 'w2',
      apiKey: 'explicit',
      takeUrl: `${B}/job-take/w2`,
      doneUrl: `${B}/job-done/w2/$ID`,
      streamUrl: `${B}/job-stream/w2/$ID`,
      pingUrl: `${B}/ping/w2`,
      pingIntervalMs: 100,
    })
  })

  it('generates a worker id when none is given', () => {
    const connection = resolveConnection({ endpointUrl: B, apiKey: 'k', env: {} })
    expect(connection.workerId).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('refuses a configuration it cannot work with, saying what is missing', () => {
    expect(() => resolveConnection({ env: {} })).toThrow(/RUNPOD_WEBHOOK_GET_JOB/)
    expect(() =>
      resolveConnection({ env: { RUNPOD_WEBHOOK_GET_JOB: `${B}/job-take/$ID?` } }),
    ).toThrow(/RUNPOD_WEBHOOK_POST_OUTPUT/)
    expect(() => resolveConnection({ endpointUrl: B, env: {} })).toThrow(/RUNPOD_AI_API_KEY/)
    expect(() => resolveConnection({ endpointUrl: 'not a url', apiKey: 'k', env: {} })).toThrow(
      WorkerConfigError,
    )
    expect(() =>
      resolveConnection({ endpointUrl: B, apiKey: 'k', env: { RUNPOD_PING_INTERVAL: 'soon' } }),
    ).toThrow(/ping interval/)
  })
})

describe('withQuery', () => {
  it('appends as runpod-python does, adding ? only when missing', () => {
    expect(withQuery('http://h/a?gpu=x', { job_in_progress: 0 })).toBe(
      'http://h/a?gpu=x&job_in_progress=0',
    )
    expect(withQuery('http://h/a', { batch_size: 3, job_in_progress: 1 })).toBe(
      'http://h/a?batch_size=3&job_in_progress=1',
    )
    expect(withQuery('http://h/a?', { isStream: true })).toBe('http://h/a?isStream=true')
    expect(withQuery('http://h/a', { job_id: 'a,b' })).toBe('http://h/a?job_id=a%2Cb')
  })
})
