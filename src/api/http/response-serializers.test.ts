import { Type } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { serializerCompiler } from './response-serializers.js'

const route = { method: 'GET', url: '/v2/pods/:podId', httpStatus: '200' } as const
const pod = () => Type.Object({ id: Type.String(), gpuCount: Type.Integer() })

describe('response serializers', () => {
  it('writes what the schema names, as fastify does', () => {
    const serialize = serializerCompiler({ schema: pod(), ...route })
    expect(serialize({ id: 'p1', gpuCount: 2, secret: 'x' })).toBe('{"id":"p1","gpuCount":2}')
  })

  it('compiles equal schemas once: a second app built with new objects gets the same serializer', () => {
    const first = serializerCompiler({ schema: pod(), ...route })
    expect(serializerCompiler({ schema: pod(), ...route, url: '/v2/pods' })).toBe(first)
    const other = serializerCompiler({ schema: Type.Object({ id: Type.String() }), ...route })
    expect(other).not.toBe(first)
    expect(other({ id: 'p1', gpuCount: 2 })).toBe('{"id":"p1"}')
  })
})
