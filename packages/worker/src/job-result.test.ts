import { describe, expect, it } from 'vitest'
import {
  chunkError,
  exceptionError,
  isStreamResult,
  resultBody,
  streamExceptionError,
} from './job-result.js'

describe('resultBody (runpod-python run_job)', () => {
  it('sends any output as is, undefined as null', () => {
    expect(resultBody('text')).toEqual({ output: 'text' })
    expect(resultBody([1, 2])).toEqual({ output: [1, 2] })
    expect(resultBody(false)).toEqual({ output: false })
    expect(resultBody(undefined)).toEqual({ output: null })
    expect(resultBody(null)).toEqual({ output: null })
  })

  it('takes error and refresh_worker out of a plain object; drops an empty output', () => {
    expect(resultBody({ a: 1, error: 'boom' })).toEqual({ output: { a: 1 }, error: 'boom' })
    expect(resultBody({ error: 'boom' })).toEqual({ error: 'boom' })
    expect(resultBody({ a: 1, error: null, refresh_worker: true })).toEqual({
      output: { a: 1 },
      stopPod: true,
    })
    expect(resultBody({})).toEqual({})
  })

  it('leaves class instances alone', () => {
    const date = new Date(0)
    expect(resultBody(date)).toEqual({ output: date })
  })
})

describe('errors', () => {
  it('reports an exception as the JSON string runpod-python sends', () => {
    const text = exceptionError(new RangeError('too big'), {
      workerId: 'w1',
      version: 'podyard-worker/1',
    })
    expect(JSON.parse(text)).toEqual({
      error_type: 'RangeError',
      error_message: 'too big',
      error_traceback: expect.stringContaining('RangeError: too big'),
      hostname: 'unknown',
      worker_id: 'w1',
      runpod_version: 'podyard-worker/1',
    })
    expect(JSON.parse(exceptionError('plain', { workerId: 'w', version: 'v' }))).toMatchObject({
      error_type: 'string',
      error_message: 'plain',
    })
  })

  it('reports a streaming exception and an error chunk as runpod-python does', () => {
    expect(streamExceptionError(new Error('x'))).toMatch(/^handler: x \ntraceback: Error: x/)
    expect(chunkError({ error: 'bad' })).toBe('bad')
    expect(chunkError({ error: { message: 'm', code: null } })).toBe('{"message":"m","code":null}')
    expect(chunkError({ error: '' })).toBeUndefined()
    expect(chunkError('error')).toBeUndefined()
  })
})

describe('isStreamResult', () => {
  it('knows generators and async iterables, not arrays or strings', async () => {
    expect(isStreamResult((function* () {})())).toBe(true)
    expect(isStreamResult((async function* () {})())).toBe(true)
    expect(isStreamResult([1])).toBe(false)
    expect(isStreamResult('abc')).toBe(false)
    expect(isStreamResult(Promise.resolve(1))).toBe(false)
    expect(isStreamResult(new Map())).toBe(false)
  })
})
