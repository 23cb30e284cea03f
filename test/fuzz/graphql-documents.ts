import fc from 'fast-check'
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isObjectType,
  isScalarType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql'
import { typeDefs } from '../../src/api/graphql/type-defs.js'
import { edgeNumber, oddString } from './hostile-values.js'

/**
 * GraphQL documents of our schema, as a client and as an attacker would write them: real root
 * fields with arguments of about the right types and random selections, aliases by the
 * hundred, nesting past the limits, introspection, and text that is not GraphQL at all.
 */

const schema: GraphQLSchema = buildSchema(typeDefs)

const literalString = (s: string) => JSON.stringify(s.replace(/[\uD800-\uDFFF]/g, '?'))

/** A literal for an argument of `type`: usually of that type, sometimes of any other. */
function literal(type: GraphQLInputType, depth: number): fc.Arbitrary<string> {
  const nullable = getNullableType(type)
  const wrong = fc.oneof(
    oddString.map(literalString),
    edgeNumber.map((n) => (Number.isFinite(n) ? String(n) : '0')),
    fc.constantFrom('null', 'true', '[]', '{}', 'UNKNOWN_ENUM', '$undefinedVariable'),
  )
  let right: fc.Arbitrary<string>
  if (isListType(nullable)) {
    right =
      depth > 3
        ? fc.constant('[]')
        : fc
            .array(literal(nullable.ofType as GraphQLInputType, depth + 1), { maxLength: 3 })
            .map((items) => `[${items.join(', ')}]`)
  } else if (isInputObjectType(nullable)) {
    const fields = Object.values(nullable.getFields())
    right =
      depth > 3 || fields.length === 0
        ? fc.constant('{}')
        : fc
            .subarray(fields, { maxLength: Math.min(8, fields.length) })
            .chain((chosen) =>
              fc.tuple(
                ...chosen.map((f) => literal(f.type, depth + 1).map((v) => `${f.name}: ${v}`)),
              ),
            )
            .map((pairs) => `{ ${pairs.join(', ')} }`)
  } else if (isEnumType(nullable)) {
    right = fc.constantFrom(...nullable.getValues().map((v) => v.name))
  } else if (isScalarType(nullable) && (nullable.name === 'Int' || nullable.name === 'Float')) {
    right = fc.integer({ min: -5, max: 100 }).map(String)
  } else if (isScalarType(nullable) && nullable.name === 'Boolean') {
    right = fc.constantFrom('true', 'false')
  } else {
    right = fc.string({ maxLength: 20 }).map(literalString)
  }
  return fc.oneof({ weight: 4, arbitrary: right }, { weight: 1, arbitrary: wrong })
}

/** A selection of `type`'s fields, `depth` levels at most. */
function selection(type: GraphQLObjectType, depth: number): fc.Arbitrary<string> {
  const fields = Object.values(type.getFields())
  return fc
    .subarray(fields, { minLength: 1, maxLength: Math.min(6, fields.length) })
    .chain((chosen) => fc.tuple(...chosen.map((field) => fieldText(field, depth))))
    .map((parts) => `{ ${parts.join(' ')} }`)
}

function fieldText(field: GraphQLField<unknown, unknown>, depth: number): fc.Arbitrary<string> {
  const named = getNamedType(field.type)
  const args =
    field.args.length === 0
      ? fc.constant('')
      : fc
          .subarray([...field.args], { maxLength: field.args.length })
          .chain((chosen) =>
            fc.tuple(...chosen.map((a) => literal(a.type, 0).map((v) => `${a.name}: ${v}`))),
          )
          .map((pairs) => (pairs.length === 0 ? '' : `(${pairs.join(', ')})`))
  const below: fc.Arbitrary<string> = isObjectType(named)
    ? depth > 0
      ? selection(named, depth - 1)
      : fc.constant('{ __typename }')
    : fc.constant('')
  return fc
    .tuple(fc.option(fc.constantFrom('a', 'b', 'x1'), { nil: undefined }), args, below)
    .map(([alias, a, b]) => `${alias ? `${alias}: ` : ''}${field.name}${a} ${b}`)
}

function rootDocument(kind: 'query' | 'mutation'): fc.Arbitrary<string> {
  const root = kind === 'query' ? schema.getQueryType()! : schema.getMutationType()!
  const fields = Object.values(root.getFields())
  return fc
    .constantFrom(...fields)
    .chain((field) => fieldText(field, 3))
    .map((text) => `${kind} { ${text} }`)
}

const aliasFlood: fc.Arbitrary<string> = fc
  .tuple(
    fc.integer({ min: 100, max: 3000 }),
    fc.constantFrom(
      '__schema { types { name fields { name } } }',
      '__typename',
      'gpuTypes { id lowestPrice(input: { gpuCount: 1 }) { stockStatus } }',
      'cpuTypes { id }',
      'myself { pods { id env } }',
      '__type(name: "Query") { fields { args { name } } }',
    ),
  )
  .map(([n, body]) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${body}`).join(' ')} }`)

const deepDocument: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 13, max: 20_000 }), fc.constantFrom('selection', 'list', 'object'))
  .map(([n, shape]) =>
    shape === 'selection'
      ? `{ myself ${'{ pods '.repeat(n)}{ id }${' }'.repeat(n)} }`
      : shape === 'list'
        ? `{ gpuTypes(input: { id: ${'['.repeat(n)}"x"${']'.repeat(n)} }) { id } }`
        : `{ gpuTypes(input: ${'{ id: '.repeat(n)}"x"${' }'.repeat(n)}) { id } }`,
  )

export const INTROSPECTION_FIELDS =
  '{ __schema { queryType { name } types { name kind fields { name args { name type { name kind ofType { name } } } } } } }'

/** One GraphQL request body's document, of any of the kinds above. */
export const graphqlDocument: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: rootDocument('query') },
  { weight: 4, arbitrary: rootDocument('mutation') },
  { weight: 1, arbitrary: aliasFlood },
  { weight: 1, arbitrary: deepDocument },
  { weight: 1, arbitrary: fc.constant(INTROSPECTION_FIELDS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '{}',
      '1',
      '"{}"',
      '{"kind":"Document","definitions":[]}',
      'query',
      '{ a',
      '#',
    ),
  },
)

/*
 * Documents aimed at what the server does before it asks for a key: the budget of
 * document-budget.ts, the public-document walk, the field limits and graphql-js's validation,
 * and the run of a keyless public query. Sizes go well past every bound.
 */

const publicLeaf = fc.constantFrom(
  '__typename',
  'gpuTypes { id }',
  'cpuTypes { id }',
  '__schema { queryType { name } }',
)
const anyLeaf = fc.oneof(
  { weight: 3, arbitrary: publicLeaf },
  { weight: 1, arbitrary: fc.constant('myself { id }') },
)

/** `n` fragments, each spreading the next `width` times: width^n paths to the leaf. */
const fanOut: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 2, max: 90 }), fc.integer({ min: 2, max: 4 }), anyLeaf)
  .map(
    ([n, width, leaf]) =>
      `query { ...F0 } ${Array.from(
        { length: n },
        (_, i) => `fragment F${i} on Query { ${`...F${i + 1} `.repeat(width)}}`,
      ).join(' ')} fragment F${n} on Query { ${leaf} }`,
  )

/** A chain of `n` fragments, each spreading the next once, or inline fragments `n` deep. */
const deepChain: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 10, max: 5000 }), anyLeaf, fc.boolean())
  .map(([n, leaf, inline]) =>
    inline
      ? `{ ${'... on Query { '.repeat(n)}${leaf}${' }'.repeat(n)} }`
      : `query { ...F0 } ${Array.from(
          { length: n },
          (_, i) => `fragment F${i} on Query { ...F${i + 1} }`,
        ).join(' ')} fragment F${n} on Query { ${leaf} }`,
  )

/** Directives by the hundred or thousand, on a field, a spread or an inline fragment. */
const manyDirectives: fc.Arbitrary<string> = fc
  .tuple(
    fc.integer({ min: 50, max: 5000 }),
    fc.constantFrom('@include(if: true)', '@skip(if: false)', '@unknown', '@include(if: $v)'),
    fc.constantFrom('field', 'spread', 'inline'),
  )
  .map(([n, directive, where]) => {
    const all = ` ${directive}`.repeat(n)
    return where === 'field'
      ? `query ($v: Boolean = true) { __typename${all} }`
      : where === 'spread'
        ? `query ($v: Boolean = true) { ...F${all} } fragment F on Query { __typename }`
        : `query ($v: Boolean = true) { ...${all} { __typename } }`
  })

/** Aliases of introspection, or the same introspection field again and again without one. */
const introspectionAliases: fc.Arbitrary<string> = fc
  .tuple(
    fc.integer({ min: 10, max: 3000 }),
    fc.constantFrom(
      '__schema { types { name fields { name } } }',
      '__schema { types { name } }',
      '__type(name: "Pod") { fields { name type { name ofType { name } } } }',
      '__type(name: "Pod") { ofType { name } }',
      '__typename',
    ),
    fc.constantFrom('aliases', 'same name', 'unused fragment', 'operations'),
  )
  .map(([n, body, how]) => {
    const copies = (count: number) =>
      Array.from({ length: count }, (_, i) => (how === 'aliases' ? `a${i}: ${body}` : body))
    if (how === 'unused fragment') {
      return `{ __typename } fragment U on Query { ${copies(n).join(' ')} }`
    }
    if (how === 'operations') {
      const per = Math.max(1, Math.floor(n / 6))
      return Array.from({ length: 6 }, (_, i) => `query Q${i} { ${copies(per).join(' ')} }`).join(
        ' ',
      )
    }
    return `{ ${copies(n).join(' ')} }`
  })

/** One document of the shapes above, all without any key on the wire. */
export const preAuthenticationDocument: fc.Arbitrary<string> = fc.oneof(
  fanOut,
  deepChain,
  manyDirectives,
  introspectionAliases,
)
