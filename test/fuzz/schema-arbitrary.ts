import fc from 'fast-check'
import { hostileValue, hugeString, oddString } from './hostile-values.js'

/** The JSON Schema keywords the served OpenAPI document uses (TypeBox's output). */
export interface JsonSchema {
  type?: string | string[]
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  allOf?: JsonSchema[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  minimum?: number
  maximum?: number
  default?: unknown
}

/**
 * Values close to what `schema` allows, as a client would send them: every property present or
 * not, numbers near the bounds, strings of the allowed sizes. `known` offers values a property
 * of that name takes (ids the server has, an image, a port) so that some requests get past
 * validation to what is behind it; `known('<name>{}')`, keys of a map of that name.
 */
export function validish(
  schema: JsonSchema,
  known: (name: string) => string[] = () => [],
  name = '',
  depth = 0,
): fc.Arbitrary<unknown> {
  if (depth > 6) return fc.constant(null)
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...schema.enum)
  const union = schema.anyOf ?? schema.oneOf
  if (union && union.length > 0) {
    return fc.oneof(...union.map((s) => validish(s, known, name, depth + 1)))
  }
  if (schema.allOf && schema.allOf.length > 0) return validish(schema.allOf[0]!, known, name, depth)
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'string': {
      const ids = known(name)
      const min = schema.minLength ?? 0
      const max = Math.min(schema.maxLength ?? 40, 200)
      const text =
        schema.format === 'date-time'
          ? fc
              .date({
                min: new Date('2000-01-01'),
                max: new Date('2100-01-01'),
                noInvalidDate: true,
              })
              .map((d) => d.toISOString())
          : schema.pattern === '^/'
            ? fc.string({ maxLength: max }).map((s) => `/${s}`)
            : fc.string({ minLength: min, maxLength: Math.max(min, max) })
      return ids.length > 0 ? fc.oneof(fc.constantFrom(...ids), text) : text
    }
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1_000, -1_000_000),
        max: Math.min(schema.maximum ?? 100_000, 1_000_000),
      })
    case 'number':
      return fc.double({
        min: schema.minimum ?? -1e6,
        max: schema.maximum ?? 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array':
      return fc.array(validish(schema.items ?? {}, known, name, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 8),
      })
    case 'object': {
      const properties = Object.entries(schema.properties ?? {})
      if (properties.length === 0 && typeof schema.additionalProperties === 'object') {
        // `known('<name>{}')` offers keys such a map takes (variable names for `env`).
        const keys = known(`${name}{}`)
        return fc.dictionary(
          keys.length > 0
            ? fc.oneof(fc.constantFrom(...keys), fc.string({ minLength: 1, maxLength: 12 }))
            : fc.string({ minLength: 1, maxLength: 12 }),
          validish(schema.additionalProperties, known, name, depth + 1),
          { maxKeys: 4 },
        )
      }
      const required = new Set(schema.required ?? [])
      return fc.record(
        Object.fromEntries(
          properties.map(([key, property]) => [key, validish(property, known, key, depth + 1)]),
        ),
        { requiredKeys: properties.map(([key]) => key).filter((key) => required.has(key)) },
      )
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/**
 * The plainest value `schema` allows, the same on every call: only the required properties, the
 * first branch of a union and the first value of an enum, the smallest number and the shortest
 * string allowed. `known(name)` as for validish: its first value stands for a property or
 * parameter of that name (an id the server has, an image).
 */
export function plainValue(
  schema: JsonSchema,
  known: (name: string) => string[] = () => [],
  name = '',
): unknown {
  if (schema.const !== undefined) return schema.const
  if (schema.enum) return schema.enum[0]
  const union = schema.anyOf ?? schema.oneOf
  if (union && union.length > 0) return plainValue(union[0]!, known, name)
  if (schema.allOf && schema.allOf.length > 0) {
    return Object.assign({}, ...schema.allOf.map((part) => plainValue(part, known, name)))
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'string': {
      const [first] = known(name)
      if (first !== undefined) return first
      if (schema.format === 'date-time') return new Date().toISOString()
      if (schema.pattern === '^/') return '/data'
      return 'x'.repeat(Math.max(schema.minLength ?? 1, 1))
    }
    case 'integer':
    case 'number':
      return schema.minimum ?? Math.min(1, schema.maximum ?? 1)
    case 'boolean':
      return false
    case 'null':
      return null
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () =>
        plainValue(schema.items ?? {}, known, name),
      )
    case 'object': {
      const required = new Set(schema.required ?? [])
      return Object.fromEntries(
        Object.entries(schema.properties ?? {})
          .filter(([key]) => required.has(key))
          .map(([key, property]) => [key, plainValue(property, known, key)]),
      )
    }
    default:
      return {}
  }
}

/** One change that makes a valid-ish value wrong in one place. */
type Mutation =
  | { kind: 'replace'; pick: number; value: unknown }
  | { kind: 'drop'; pick: number }
  | { kind: 'extra'; key: string; value: unknown }
  | { kind: 'whole'; value: unknown }

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      pick: fc.nat(),
      value: hostileValue,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('extra' as const),
      key: oddString,
      value: hostileValue,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('whole' as const),
      value: fc.oneof(hostileValue, hugeString),
    }),
  },
)

/** Every object of `value` (itself included), for a mutation to pick one of. */
function objectsIn(value: unknown, into: Array<Record<string, unknown>> = []) {
  if (typeof value === 'object' && value !== null) {
    if (!Array.isArray(value)) into.push(value as Record<string, unknown>)
    for (const child of Object.values(value)) objectsIn(child, into)
  }
  return into
}

function mutate(value: unknown, change: Mutation): unknown {
  if (change.kind === 'whole') return change.value
  const copy = structuredClone(value)
  const objects = objectsIn(copy)
  if (objects.length === 0) return change.kind === 'extra' ? { [change.key]: change.value } : copy
  if (change.kind === 'extra') {
    objects[0]![change.key] = change.value
    return copy
  }
  const target = objects[change.pick % objects.length]!
  const keys = Object.keys(target)
  if (keys.length === 0) return copy
  const key = keys[change.pick % keys.length]!
  if (change.kind === 'drop') delete target[key]
  else target[key] = change.value
  return copy
}

/** Valid-ish values of `schema`, half of them changed in one place to something hostile. */
export function fuzzed(
  schema: JsonSchema,
  known: (name: string) => string[] = () => [],
): fc.Arbitrary<unknown> {
  const base = validish(schema, known)
  return fc.oneof(
    base,
    fc.tuple(base, mutation).map(([value, change]) => mutate(value, change)),
  )
}
