import { describe, expect, it } from 'vitest'
import { redactUrl } from './log-redaction.js'

describe('redactUrl', () => {
  it('redacts secret parameters however their names are spelt', () => {
    for (const name of [
      'api_key',
      'api%5Fkey',
      'api%5fkey',
      '%61pi_key',
      'API_KEY',
      'Api-Key',
      'apiKey',
      'api+key',
      'api_key[]',
      'token',
      'access_token',
      'password',
      'signature',
    ]) {
      expect(redactUrl(`/graphql?x=1&${name}=pyd_secret&y=2`), name).toBe(
        `/graphql?x=1&${name}=[redacted]&y=2`,
      )
    }
  })

  it('keeps other parameters, and URLs without a query, as they are', () => {
    expect(redactUrl('/v2/pods?computeType=GPU&includeMachine=true')).toBe(
      '/v2/pods?computeType=GPU&includeMachine=true',
    )
    expect(redactUrl('/v2/pods')).toBe('/v2/pods')
    expect(redactUrl('/v2/x?keyword=a&monkey=b')).toBe('/v2/x?keyword=a&monkey=b')
  })

  it('redacts a malformed escape too, and every repetition', () => {
    expect(redactUrl('/graphql?api%5Fkey%=a&api_key=b&api_key=c')).toBe(
      '/graphql?api%5Fkey%=[redacted]&api_key=[redacted]&api_key=[redacted]',
    )
  })

  it("redacts a GraphQL GET's operation and variables, which may hold literals", () => {
    expect(redactUrl('/graphql?query=mutation%7Bx(password%3A%22p%22)%7D&variables=%7B%7D')).toBe(
      '/graphql?query=[redacted]&variables=[redacted]',
    )
    expect(redactUrl('/v2/x?query=a')).toBe('/v2/x?query=a')
  })
})
