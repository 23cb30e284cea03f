import { parse } from 'graphql'
import { describe, expect, it } from 'vitest'
import { isPublicDocument, isPublicRequest } from './public-operations.js'

/**
 * `n` fragments, each spreading the next `width` times, the last selecting `leaf`: 2^n paths
 * from the operation to the leaf in 15 * n bytes.
 */
const fanOut = (n: number, leaf: string, width = 2) =>
  `query { ...F0 } ${Array.from(
    { length: n },
    (_, i) => `fragment F${i} on Query { ${`...F${i + 1} `.repeat(width)}}`,
  ).join(' ')} fragment F${n} on Query { ${leaf} }`

describe('isPublicRequest', () => {
  it('allows queries of only gpuTypes, cpuTypes and introspection', () => {
    for (const query of [
      '{ gpuTypes { id } }',
      'query GpuTypes { gpuTypes(input: {id: "x"}) { id lowestPrice(input: {gpuCount: 1}) { stockStatus } } }',
      '{ cpuTypes { id } __typename }',
      '{ __schema { types { name } } }',
      '{ ... on Query { gpuTypes { id } } ...F } fragment F on Query { cpuTypes { id } }',
      // gpuhunt's catalog queries (dstack's offers), as RunPod answers them without a key.
      'query GpuTypes { countryCodes dataCenters { id listed } gpuTypes { id } }',
      'query CpuFlavors($dc: String!) { cpuFlavors { id specifics(input: {dataCenterId: $dc}) { securePrice } } }',
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
      ['{ countryCodes myself { networkVolumes { id } } }', undefined],
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

  it('looks at each fragment once: fragments spread twice each, 60 deep, decide at once', () => {
    // Walked once per path, this is 2^60 visits and would never end; n = 25 took 12 s.
    expect(isPublicRequest(fanOut(60, 'gpuTypes { id } __typename'), undefined)).toBe(true)
    expect(isPublicRequest(fanOut(60, 'gpuTypes { id } myself { id }'), undefined)).toBe(false)
    // Past the document budget too, the walk itself is linear: 1 000 fragments spread 3 times.
    const started = performance.now()
    expect(isPublicDocument(parse(fanOut(1000, '__typename', 3)), undefined)).toBe(true)
    expect(isPublicDocument(parse(fanOut(1000, 'myself { id }', 3)), undefined)).toBe(false)
    expect(performance.now() - started).toBeLessThan(1000)
  })

  it('remembers verdicts without mistaking a fragment spread twice for a cycle', () => {
    for (const [query, expected] of [
      // G is reached twice, through F and directly: public both times.
      ['{ ...F ...G } fragment F on Query { ...G } fragment G on Query { cpuTypes { id } }', true],
      // H is private, reached through G after G's public part.
      [
        '{ ...F ...G } fragment F on Query { ...G } fragment G on Query { cpuTypes { id } ...H } fragment H on Query { myself { id } }',
        false,
      ],
      // A cycle further down: G spreads F, which is being looked at.
      ['{ ...F } fragment F on Query { ...G } fragment G on Query { __typename ...F }', false],
      ['{ ... on Query { ...F } ...F } fragment F on Query { __typename }', true],
    ] as const) {
      expect(isPublicRequest(query, undefined), query).toBe(expected)
    }
  })
})
