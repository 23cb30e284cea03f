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
