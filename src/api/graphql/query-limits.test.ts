import { buildSchema, getIntrospectionQuery, parse, validate } from 'graphql'
import { describe, expect, it } from 'vitest'
import {
  MAX_INTROSPECTION_DEPTH,
  MAX_QUERY_DEPTH,
  MAX_QUERY_FIELDS,
  queryLimitsRule,
} from './query-limits.js'

// A cyclic schema, so that documents of any depth can be written.
const schema = buildSchema(`
  type Query { node: Node }
  type Node { id: String, child: Node }
`)

/** `levels` levels below `node`: child { child { ... id } }. */
const nested = (levels: number) => {
  let selection = 'id'
  for (let i = 1; i < levels; i++) selection = `child { ${selection} }`
  return selection
}

const messages = (source: string) =>
  validate(schema, parse(source), [queryLimitsRule]).map((e) => e.message)

describe('queryLimitsRule', () => {
  it(`passes ${MAX_QUERY_DEPTH} levels and stops one more, naming the operation`, () => {
    expect(messages(`query Ok { node { ${nested(MAX_QUERY_DEPTH - 1)} } }`)).toEqual([])
    const errors = validate(schema, parse(`query Deep { node { ${nested(MAX_QUERY_DEPTH)} } }`), [
      queryLimitsRule,
    ])
    expect(errors.map((e) => e.message)).toEqual([
      `query Deep is nested ${MAX_QUERY_DEPTH + 1} levels deep; the limit is ${MAX_QUERY_DEPTH}: select fewer nested fields`,
    ])
    expect(errors[0]!.extensions).toEqual({ code: 'VALIDATION_FAILED' })
  })

  it('counts through fragments and inline fragments, and survives fragment cycles', () => {
    const viaFragments = `
      query { node { ...A } }
      fragment A on Node { child { ... on Node { child { ...B } } } }
      fragment B on Node { ${nested(MAX_QUERY_DEPTH)} }`
    expect(messages(viaFragments)).toEqual([
      `this query is nested ${MAX_QUERY_DEPTH + 3} levels deep; the limit is ${MAX_QUERY_DEPTH}: select fewer nested fields`,
    ])
    expect(messages('query { node { ...A } } fragment A on Node { child { ...A } }')).toEqual([])
  })

  it(`passes ${MAX_QUERY_FIELDS} fields and stops one more, counting aliases and fragment reuse`, () => {
    // Each alias selects node and id: 2 fields.
    const aliases = (n: number) =>
      Array.from({ length: n }, (_, i) => `a${i}: node { id }`).join(' ')
    expect(messages(`{ ${aliases(MAX_QUERY_FIELDS / 2)} }`)).toEqual([])
    expect(messages(`{ ${aliases(MAX_QUERY_FIELDS / 2)} extra: node { id } }`)).toEqual([
      `this query selects ${MAX_QUERY_FIELDS + 2} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
    ])
    // Fragments doubling at each level: 2^11 leaf selections from a tiny document.
    const doubling = Array.from(
      { length: 10 },
      (_, i) => `fragment F${i} on Node { a: child { ...F${i + 1} } b: child { ...F${i + 1} } }`,
    ).join(' ')
    expect(messages(`{ node { ...F0 } } ${doubling} fragment F10 on Node { id }`)[0]).toMatch(
      /^this query selects \d+ fields/,
    )
  })

  it('counts introspection fields against the field limit (issue 16)', () => {
    // Each alias selects __schema, types and name: 3 fields.
    const schemas = (n: number) =>
      Array.from({ length: n }, (_, i) => `s${i}: __schema { types { name } }`).join(' ')
    expect(messages(`{ ${schemas(333)} }`)).toEqual([])
    expect(messages(`{ ${schemas(334)} }`)).toEqual([
      `this query selects 1002 fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
    ])
    const typenames = Array.from({ length: MAX_QUERY_FIELDS + 1 }, (_, i) => `t${i}: __typename`)
    expect(messages(`{ ${typenames.join(' ')} }`)[0]).toMatch(/selects 1001 fields/)
  })

  it('limits the depth of introspection apart; the standard introspection query passes', () => {
    const ofTypes = (levels: number) =>
      `${'ofType { '.repeat(levels - 3)}name${' }'.repeat(levels - 3)}`
    expect(messages(`{ __schema { types { ${ofTypes(MAX_INTROSPECTION_DEPTH)} } } }`)).toEqual([])
    expect(
      messages(`{ node { id } __schema { types { ${ofTypes(MAX_INTROSPECTION_DEPTH + 1)} } } }`),
    ).toEqual([
      `this query nests introspection ${MAX_INTROSPECTION_DEPTH + 1} levels deep; the limit is ${MAX_INTROSPECTION_DEPTH}`,
    ])
    expect(messages(getIntrospectionQuery())).toEqual([])
  })
})
