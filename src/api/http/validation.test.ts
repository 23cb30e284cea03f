import { Type } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { describeValidationErrors, validatorCompiler } from './validation.js'

const Body = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    gpu: Type.Optional(
      Type.Object(
        { id: Type.String(), count: Type.Integer({ minimum: 1 }) },
        { additionalProperties: false },
      ),
    ),
    mounts: Type.Optional(
      Type.Object({ network: Type.Array(Type.Object({ path: Type.String() }), { maxItems: 1 }) }),
    ),
  },
  { additionalProperties: false },
)

function failures(part: 'body' | 'querystring', value: unknown): string[] {
  const validate = validatorCompiler({
    schema: Body,
    httpPart: part,
    method: 'POST',
    url: '/',
  }) as unknown as {
    (v: unknown): boolean
    errors: Parameters<typeof describeValidationErrors>[1]
  }
  expect(validate(value)).toBe(false)
  return describeValidationErrors(part, validate.errors)
}

describe('validation messages', () => {
  it('names each failing location and its problem', () => {
    expect(failures('body', { name: '', gpu: { id: 'x', count: 0 } })).toEqual([
      'body.name: must NOT have fewer than 1 characters',
      'body.gpu.count: must be >= 1',
    ])
  })

  it('lists unknown and missing properties, including nested ones', () => {
    expect(failures('body', { bogus: 1, gpu: { id: 'x', count: 1, extra: true } })).toEqual([
      'body.name: is required',
      'body.bogus: unknown property',
      'body.gpu.extra: unknown property',
    ])
  })

  it('does not coerce body values but names array positions', () => {
    expect(failures('body', { name: 'a', gpu: { id: 'x', count: '2' } })).toEqual([
      'body.gpu.count: must be integer',
    ])
    expect(failures('body', { name: 'a', mounts: { network: [{ path: 1 }, {}] } })).toEqual([
      'body.mounts.network: must NOT have more than 1 items',
      'body.mounts.network[0].path: must be string',
      'body.mounts.network[1].path: is required',
    ])
  })
})

describe('validators', () => {
  const compile = (httpPart: 'body' | 'querystring') =>
    validatorCompiler({
      schema: Type.Object({ count: Type.Integer() }),
      httpPart,
      method: 'GET',
      url: '/',
    }) as unknown as (value: unknown) => boolean

  it('are compiled once per schema and part: equal schemas built as new objects share one', () => {
    expect(compile('body')).toBe(compile('body'))
    expect(compile('querystring')).toBe(compile('querystring'))
    // A query string's text is coerced, a body's value is not.
    expect(compile('querystring')({ count: '2' })).toBe(true)
    expect(compile('body')({ count: '2' })).toBe(false)
  })
})
