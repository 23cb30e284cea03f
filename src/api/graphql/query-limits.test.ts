import { getIntrospectionQuery, parse } from 'graphql'
import { describe, expect, it } from 'vitest'
import {
  MAX_DOCUMENT_FIELDS,
  MAX_INTROSPECTION_DEPTH,
  MAX_QUERY_DEPTH,
  MAX_QUERY_FIELDS,
  queryLimitErrors,
} from './query-limits.js'

// Documents of a cyclic schema (type Query { node: Node } type Node { id: String, child: Node }),
// so that they can be of any depth; the limits need no schema.

/** `levels` levels below `node`: child { child { ... id } }. */
const nested = (levels: number) => {
  let selection = 'id'
  for (let i = 1; i < levels; i++) selection = `child { ${selection} }`
  return selection
}

const messages = (source: string) => queryLimitErrors(parse(source)).map((e) => e.message)

describe('queryLimitErrors', () => {
  it(`passes ${MAX_QUERY_DEPTH} levels and stops one more, naming the operation`, () => {
    expect(messages(`query Ok { node { ${nested(MAX_QUERY_DEPTH - 1)} } }`)).toEqual([])
    const errors = queryLimitErrors(parse(`query Deep { node { ${nested(MAX_QUERY_DEPTH)} } }`))
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

  it('counts introspection fields against the field limit', () => {
    // Each alias selects __schema, types and name: 3 fields.
    const schemas = (n: number) =>
      Array.from({ length: n }, (_, i) => `s${i}: __schema { types { name } }`).join(' ')
    const third = Math.floor(MAX_QUERY_FIELDS / 3)
    expect(messages(`{ ${schemas(third)} }`)).toEqual([])
    expect(messages(`{ ${schemas(third + 1)} }`)).toEqual([
      `this query selects ${3 * (third + 1)} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
    ])
    const typenames = Array.from({ length: MAX_QUERY_FIELDS + 1 }, (_, i) => `t${i}: __typename`)
    expect(messages(`{ ${typenames.join(' ')} }`)[0]).toMatch(
      new RegExp(`selects ${MAX_QUERY_FIELDS + 1} fields`),
    )
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

  it('needs no schema, and counts fragments spread twice each, 60 deep, at once', () => {
    const fanOut = Array.from(
      { length: 60 },
      (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`,
    ).join(' ')
    const errors = queryLimitErrors(
      parse(`query FanOut { ...F0 } ${fanOut} fragment F60 on Query { __typename }`),
    )
    expect(errors.map((e) => e.message)).toEqual([
      `query FanOut selects ${2 ** 60} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
    ])
    expect(errors[0]!.extensions).toEqual({ code: 'VALIDATION_FAILED' })
    expect(errors[0]!.locations).toEqual([{ line: 1, column: 1 }])
    expect(queryLimitErrors(parse(getIntrospectionQuery()))).toEqual([])
  })

  it(`holds each fragment, used or not, to ${MAX_QUERY_FIELDS} fields`, () => {
    // Each copy selects __type, ofType and name: 3 fields.
    const copies = (n: number) => '__type(name: "Pod") { ofType { name } } '.repeat(n)
    const third = Math.floor(MAX_QUERY_FIELDS / 3)
    expect(messages(`{ __typename } fragment U on Query { ${copies(third)} }`)).toEqual([])
    expect(messages(`{ __typename } fragment U on Query { ${copies(third + 1)} }`)).toEqual([
      `fragment U selects ${3 * (third + 1)} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
    ])
    // A fragment on an introspection type is measured as introspection: TypeRef's depth passes.
    const typeRef = `fragment TypeRef on __Type { ${'ofType { '.repeat(18)}name${' }'.repeat(18)} }`
    expect(messages(`{ __type(name: "Pod") { ...TypeRef } } ${typeRef}`)).toEqual([])
  })

  it(`adds up the fields of every operation and fragment to ${MAX_DOCUMENT_FIELDS} at most`, () => {
    const copies = (n: number) => '__type(name: "Pod") { name } '.repeat(n)
    const half = MAX_QUERY_FIELDS / 2
    const roots = (n: number) =>
      Array.from({ length: n }, (_, i) => `query Q${i} { ${copies(half)} }`).join(' ')
    const within = MAX_DOCUMENT_FIELDS / MAX_QUERY_FIELDS
    expect(messages(roots(within))).toEqual([])
    expect(messages(roots(within + 1))).toEqual([
      `this document selects ${MAX_DOCUMENT_FIELDS + MAX_QUERY_FIELDS} fields in all its operations and fragments (each with its fragments expanded); the limit is ${MAX_DOCUMENT_FIELDS}: split it into smaller documents`,
    ])
    // graphql-js's introspection query: 229 fields in the operation, 240 in its fragments.
    expect(
      queryLimitErrors(
        parse(getIntrospectionQuery({ inputValueDeprecation: true, schemaDescription: true })),
      ),
    ).toEqual([])
  })
})
