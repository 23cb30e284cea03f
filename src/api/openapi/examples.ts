/**
 * An example of each operation's request body and success answer, for the docs page and the
 * comments of generated clients. A named schema's own example (component-names.ts) is used
 * where there is one; the rest is built from the schema: each field's example, default or first
 * allowed value, a plausible value by format and name otherwise. test/api/openapi-document.test.ts
 * checks that every example matches its schema.
 */

type JsonObject = Record<string, unknown>

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const MAX_DEPTH = 24
/** Strings tried, in order, for a field whose schema has a pattern. */
const PATTERNED = ['MY_SECRET', 'my-workload', '12.4', '/workspace', 'q8v2k9x3m1', '8888/http']
const TIME = '2026-01-15T09:30:00.000Z'

/** A string for a field named `name`, by its format and name. */
function stringFor(schema: JsonObject, name: string): string | undefined {
  if (typeof schema.pattern === 'string') {
    const pattern = new RegExp(schema.pattern, 'u')
    return PATTERNED.find((candidate) => pattern.test(candidate))
  }
  const format = schema.format
  if (format === 'date-time') return TIME
  if (format === 'date') return TIME.slice(0, 10)
  if (format === 'uri' || format === 'url') return 'https://hooks.example.com/podyard'
  if (format === 'email') return 'ada@example.com'
  let value = /id$/i.test(name)
    ? 'q8v2k9x3m1'
    : /image/i.test(name)
      ? 'runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04'
      : /name$/i.test(name)
        ? 'my-workload'
        : name || 'text'
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity
  while (value.length < min) value += 'x'
  return value.slice(0, max)
}

function numberFor(schema: JsonObject): number {
  const min = typeof schema.minimum === 'number' ? schema.minimum : undefined
  const max = typeof schema.maximum === 'number' ? schema.maximum : undefined
  let value = min !== undefined && min > 1 ? min : 1
  if (max !== undefined && value > max) value = max
  if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) {
    value = schema.exclusiveMinimum + 1
  }
  return value
}

/** An example of `schema` (`undefined` when none can be made), named components resolved. */
export function exampleOf(
  schema: unknown,
  components: JsonObject,
  name = '',
  depth = 0,
  within: ReadonlySet<string> = new Set(),
): unknown {
  if (!isObject(schema) || depth > MAX_DEPTH) return undefined
  if (typeof schema.$ref === 'string') {
    // A schema that contains itself (a tree) stops at its second level.
    if (within.has(schema.$ref)) return undefined
    const named = components[schema.$ref.split('/').pop()!]
    return exampleOf(named, components, name, depth + 1, new Set([...within, schema.$ref]))
  }
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if (schema.example !== undefined) return schema.example
  if (schema.default !== undefined) return schema.default
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum.find((v) => v !== null) ?? null
  const union = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined
  if (Array.isArray(union)) {
    for (const member of union) {
      if (isObject(member) && member.type === 'null') continue
      const value = exampleOf(member, components, name, depth + 1, within)
      if (value !== undefined) return value
    }
    return null
  }
  if (Array.isArray(schema.allOf)) {
    const parts = schema.allOf.map((part) => exampleOf(part, components, name, depth + 1, within))
    return Object.assign({}, ...parts.filter(isObject)) as JsonObject
  }
  const type = Array.isArray(schema.type)
    ? (schema.type as unknown[]).find((t) => t !== 'null')
    : schema.type
  if (type === 'object' || isObject(schema.properties)) {
    const properties = (schema.properties ?? {}) as JsonObject
    const required = new Set(Array.isArray(schema.required) ? schema.required : [])
    const object: JsonObject = {}
    for (const [key, child] of Object.entries(properties)) {
      // Optional fields only where the field gives its own example: optional often means "one of".
      const own = isObject(child) && (child.examples !== undefined || child.example !== undefined)
      if (!required.has(key) && !own) continue
      const value = exampleOf(child, components, key, depth + 1, within)
      if (value !== undefined) object[key] = value
    }
    return object
  }
  if (type === 'array') {
    const item = exampleOf(schema.items, components, name, depth + 1, within)
    const min = typeof schema.minItems === 'number' ? schema.minItems : 0
    return item === undefined ? [] : Array.from({ length: Math.max(1, min) }, () => item)
  }
  if (type === 'string') return stringFor(schema, name)
  if (type === 'integer' || type === 'number') return numberFor(schema)
  if (type === 'boolean') return true
  if (type === 'null') return null
  // Any value (a job's input or output): an object is the usual one.
  return type === undefined ? {} : undefined
}

interface Media {
  schema?: unknown
  example?: unknown
  examples?: unknown
}

/** Gives each operation's JSON request body and success answer an example, where none is. */
export function addExamples(document: {
  paths: Record<string, Record<string, JsonObject>>
  components?: JsonObject
}): void {
  const components = (document.components?.schemas ?? {}) as JsonObject
  const responses = (document.components?.responses ?? {}) as JsonObject
  const fill = (content: unknown) => {
    const media = isObject(content) ? (content['application/json'] as Media | undefined) : undefined
    if (!isObject(media) || media.example !== undefined || media.examples !== undefined) return
    const example = exampleOf(media.schema, components)
    if (example !== undefined) media.example = example
  }
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      const body = operation.requestBody
      if (isObject(body)) fill(body.content)
      for (const [code, response] of Object.entries((operation.responses ?? {}) as JsonObject)) {
        if (code.startsWith('2') && isObject(response)) fill(response.content)
      }
    }
  }
  // The shared error answers show a problem.
  for (const response of Object.values(responses)) {
    if (!isObject(response) || !isObject(response.content)) continue
    const media = response.content['application/problem+json']
    if (isObject(media) && media.example === undefined) {
      media.example = exampleOf(media.schema, components)
    }
  }
}
