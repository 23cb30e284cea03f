/**
 * Names for every shape a client generator would otherwise name itself: request and success
 * bodies written in place get the operation's name (`ListPodsResult`, `CreateApiKeyInput`: not
 * `...Request` or `...Response`, which generators give their own types of each operation, so a
 * schema so named is renamed `ListPodsResponse2`), objects nested in named
 * schemas get their parent's name and their property's (`PodSsh`, `PodSshDirect`). Generators
 * name such shapes after the path they were found at (`GetOwnCredits200AllOfEntriesItem`),
 * which changes whenever a route moves; these names change only with the operation id or the
 * property. Unions of single values become plain `enum`s, which every generator reads as one.
 */

type Json = unknown
type JsonObject = Record<string, Json>

const isObject = (value: Json): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const SKIPPED = new Set(['examples', 'example', 'default', 'const', 'enum'])

export const pascalCase = (text: string): string =>
  text
    .replace(/[^A-Za-z0-9]+(.)?/g, (_, next: string | undefined) => (next ?? '').toUpperCase())
    .replace(/^./, (first) => first.toUpperCase())

/** The one value a union member stands for, or `undefined` when it stands for more. */
function singleValue(member: Json): { value: Json; type?: Json } | undefined {
  if (!isObject(member)) return undefined
  if ('const' in member) return { value: member.const, type: member.type }
  if (Array.isArray(member.enum) && member.enum.length === 1) {
    return { value: member.enum[0], type: member.type }
  }
  return undefined
}

/**
 * `anyOf: [{const: 'a'}, {const: 'b'}, {type: 'null'}]` as `enum: ['a', 'b', null]`, with the
 * union's own keywords (description) kept. TypeBox writes a union of literals as the former.
 */
function plainEnum(schema: JsonObject): JsonObject {
  const key = Array.isArray(schema.anyOf) ? 'anyOf' : Array.isArray(schema.oneOf) ? 'oneOf' : null
  if (key === null) return schema
  const members = schema[key] as Json[]
  const nullable = members.some((m) => isObject(m) && m.type === 'null' && !('enum' in m))
  const values = members.filter((m) => !(isObject(m) && m.type === 'null' && !('enum' in m)))
  const singles = values.map(singleValue)
  if (singles.length === 0 || singles.some((s) => s === undefined)) return schema
  const types = new Set(singles.map((s) => s!.type ?? typeof s!.value))
  if (types.size !== 1) return schema
  const [type] = [...types] as [Json]
  const rest = Object.fromEntries(Object.entries(schema).filter(([k]) => k !== key))
  return {
    ...rest,
    type: nullable ? [type, 'null'] : type,
    enum: [...singles.map((s) => s!.value), ...(nullable ? [null] : [])],
  }
}

/** Every union of single values in `value`, anywhere, as a plain enum. */
export function plainEnums(value: Json): Json {
  if (Array.isArray(value)) return value.map(plainEnums)
  if (!isObject(value)) return value
  const copy: JsonObject = {}
  for (const [key, child] of Object.entries(value)) {
    copy[key] = SKIPPED.has(key) ? child : plainEnums(child)
  }
  return plainEnum(copy)
}

/** A shape a generator would have to name: an object, or an array of objects, not a reference. */
export function isAnonymousObject(schema: Json): boolean {
  if (!isObject(schema) || typeof schema.$ref === 'string') return false
  if (schema.type === 'array') return isAnonymousObject(schema.items)
  const union = (schema.anyOf ?? schema.oneOf) as Json[] | undefined
  return (
    schema.type === 'object' ||
    isObject(schema.properties) ||
    Array.isArray(schema.allOf) ||
    (Array.isArray(union) && union.some(isAnonymousObject))
  )
}

/**
 * The name of a union member that a property of one value tells apart (`type: QUEUE_DELAY` is
 * `QueueDelay`), so that the variants of a tagged union are named by what they are rather than
 * numbered; undefined when no property has a single string value.
 */
function variantName(member: JsonObject): string | undefined {
  for (const property of Object.values(member.properties as JsonObject)) {
    const single = singleValue(property)
    if (typeof single?.value === 'string' && /[A-Za-z]/.test(single.value)) {
      return pascalCase(single.value.toLowerCase())
    }
  }
  return undefined
}

/**
 * Adds `schema` to `components` under `name` (or the name an identical schema already has, or
 * `name` with a number when the name holds another shape) and answers the reference.
 */
function register(components: JsonObject, name: string, schema: JsonObject): JsonObject {
  const text = JSON.stringify(schema)
  const same = Object.entries(components).find(([, known]) => JSON.stringify(known) === text)
  let chosen = same?.[0] ?? name
  for (let n = 2; same === undefined && components[chosen] !== undefined; n += 1) {
    chosen = `${name}${n}`
  }
  components[chosen] = schema
  return { $ref: `#/components/schemas/${chosen}` }
}

/**
 * The schema named `name` with each object nested in it moved to components under a name of
 * its own. The parts of an `allOf` are the named schema itself; members of a union (nullable
 * objects) take the name the property gives.
 */
function nameNested(schema: JsonObject, name: string, components: JsonObject): JsonObject {
  const visit = (value: Json, at: string, top: boolean): Json => {
    if (Array.isArray(value)) return value.map((item) => visit(item, at, false))
    if (!isObject(value)) return value
    const copy: JsonObject = {}
    for (const [key, child] of Object.entries(value)) {
      if (SKIPPED.has(key)) copy[key] = child
      else if (key === 'properties' && isObject(child)) {
        copy[key] = Object.fromEntries(
          Object.entries(child).map(([prop, sub]) => [
            prop,
            visit(sub, at + pascalCase(prop), false),
          ]),
        )
      } else if (key === 'items') copy[key] = visit(child, `${at}Item`, false)
      else if (key === 'additionalProperties') copy[key] = visit(child, `${at}Value`, false)
      else if (key === 'allOf' && Array.isArray(child)) {
        copy[key] = child.map((part) => (top ? visitTop(part, at) : visit(part, at, false)))
      } else if ((key === 'anyOf' || key === 'oneOf') && Array.isArray(child)) {
        const objects = child.filter((m) => isObject(m) && isObject(m.properties)).length
        let n = 0
        copy[key] = child.map((member) => {
          const own = isObject(member) && isObject(member.properties) && objects > 1
          if (!own) return visit(member, at, false)
          n += 1
          return visit(member, at + (variantName(member) ?? `Option${n}`), false)
        })
      } else copy[key] = child
    }
    // Members without a type only constrain their parent (required sets): no shape to name.
    if (top || !isObject(copy.properties) || copy.type !== 'object') return copy
    return register(components, at, copy)
  }
  const visitTop = (part: Json, at: string): Json => visit(part, at, true)
  return visit(schema, name, true) as JsonObject
}

interface Operation extends JsonObject {
  operationId?: string
  requestBody?: { content?: Record<string, { schema?: Json }> }
  responses?: Record<string, { content?: Record<string, { schema?: Json }> }>
}

/**
 * Names the document's shapes in place: request and success bodies written out in an operation,
 * then every object nested in a named schema; unions of single values become enums.
 */
export function nameDocumentShapes(document: {
  paths: Record<string, Record<string, Operation>>
  components?: { schemas?: Record<string, unknown> }
}): void {
  const components = plainEnums(document.components?.schemas ?? {}) as JsonObject
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      const name = pascalCase(operation.operationId ?? 'Operation')
      const bodies: Array<[Record<string, { schema?: Json }> | undefined, string]> = [
        [operation.requestBody?.content, `${name}Input`],
      ]
      for (const [code, response] of Object.entries(operation.responses ?? {})) {
        if (code.startsWith('2')) bodies.push([response.content, `${name}Result`])
      }
      for (const [content, bodyName] of bodies) {
        for (const media of Object.values(content ?? {})) {
          const schema = plainEnums(media.schema)
          media.schema =
            isAnonymousObject(schema) && isObject(schema)
              ? register(components, bodyName, schema)
              : schema
        }
      }
      if (Array.isArray(operation.parameters)) {
        operation.parameters = plainEnums(operation.parameters)
      }
    }
  }
  for (const name of Object.keys(components)) {
    components[name] = nameNested(components[name] as JsonObject, name, components)
  }
  document.components = {
    ...document.components,
    schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
  }
}
