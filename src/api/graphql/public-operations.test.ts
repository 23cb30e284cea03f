import { describe, expect, it } from 'vitest'
import { isPublicRequest } from './public-operations.js'

describe('isPublicRequest', () => {
  it('allows queries of only gpuTypes, cpuTypes and introspection', () => {
    for (const query of [
      '{ gpuTypes { id } }',
      'query GpuTypes { gpuTypes(input: {id: "x"}) { id lowestPrice(input: {gpuCount: 1}) { stockStatus } } }',
      '{ cpuTypes { id } __typename }',
      '{ __schema { types { name } } }',
      '{ ... on Query { gpuTypes { id } } ...F } fragment F on Query { cpuTypes { id } }',
    ]) {
      expect(isPublicRequest(query, undefined), query).toBe(true)
    }
    expect(isPublicRequest('query A { gpuTypes { id } } query B { myself { id } }', 'A')).toBe(true)
  })

  it('refuses everything else', () => {
    for (const [query, operationName] of [
      ['{ myself { id } }', undefined],
      ['{ gpuTypes { id } pod(input: {podId: "x"}) { id } }', undefined],
      ['{ ...F } fragment F on Query { myself { id } }', undefined],
      ['{ ...F } fragment F on Query { ...F }', undefined],
      ['{ ...Missing }', undefined],
      ['mutation { podTerminate(input: {podId: "x"}) }', undefined],
      ['subscription { gpuTypes { id } }', undefined],
      ['query A { gpuTypes { id } } query B { myself { id } }', 'B'],
      ['query A { gpuTypes { id } } query B { cpuTypes { id } }', undefined],
      ['query A { gpuTypes { id } }', 'C'],
      ['{ gpuTypes { id ', undefined],
      [undefined, undefined],
      [42, undefined],
    ] as Array<[unknown, unknown]>) {
      expect(isPublicRequest(query, operationName), String(query)).toBe(false)
    }
  })
})
