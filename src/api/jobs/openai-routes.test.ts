import { describe, expect, it } from 'vitest'
import type { OpenAIFailure } from '../../domain/serverless/openai-bridge.js'
import { failureStatus, openaiErrorBody } from './openai-routes.js'

const failure = (reason: OpenAIFailure['reason'], code: OpenAIFailure['error']['code'] = null) => ({
  reason,
  error: { message: 'm', type: 't', param: null, code },
})

describe('HTTP status of a job without an answer', () => {
  it("is the worker's status when its error code is one, else 500", () => {
    expect(failureStatus(failure('worker-error', 400))).toBe(400)
    expect(failureStatus(failure('worker-error', '404'))).toBe(404)
    expect(failureStatus(failure('worker-error', 599))).toBe(599)
    for (const code of [null, 'job_failed', 200, 399, 600, 400.5]) {
      expect(failureStatus(failure('worker-error', code))).toBe(500)
    }
  })

  it('is 504 for timeouts and waits, 409 when cancelled, 502 for unusable output', () => {
    expect(failureStatus(failure('timed-out'))).toBe(504)
    expect(failureStatus(failure('pending'))).toBe(504)
    expect(failureStatus(failure('cancelled'))).toBe(409)
    expect(failureStatus(failure('unexpected-output'))).toBe(502)
  })
})

describe("OpenAI's error body for the platform's own errors", () => {
  it('names a type per status', () => {
    expect(openaiErrorBody(401, 'no key', 'unauthenticated')).toEqual({
      error: {
        message: 'no key',
        type: 'authentication_error',
        param: null,
        code: 'unauthenticated',
      },
    })
    expect(openaiErrorBody(403, 'm', 'forbidden').error.type).toBe('permission_error')
    expect(openaiErrorBody(404, 'm', 'not_found').error.type).toBe('invalid_request_error')
    expect(openaiErrorBody(429, 'm', 'rate_limited').error.type).toBe('rate_limit_error')
    expect(openaiErrorBody(500, 'm', 'internal').error.type).toBe('server_error')
  })
})
