/**
 * Named component schemas of the OpenAPI document. Route schemas name the shapes clients share
 * with a `title` (`Pod`, `Endpoint`, `Job`, ...); the document keeps each once under
 * `components.schemas` and refers to it, so that a generated client has one `Pod` type, not one
 * per operation.
 */

type Json = unknown
type JsonObject = Record<string, Json>

const isObject = (value: Json): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Keys whose values are maps of names to schemas, not schemas themselves. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions'])

/**
 * The schema with every titled schema inside it (itself included, unless `keepTop`) replaced by
 * a reference, the titled ones added to `components`. The same title twice must be the same
 * schema: two shapes under one name would make a client's type lie about one of them.
 */
function hoist(schema: Json, components: JsonObject, keepTop: boolean): Json {
  if (Array.isArray(schema)) return schema.map((item) => hoist(item, components, false))
  if (!isObject(schema)) return schema
  const copy: JsonObject = {}
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      copy[key] = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [name, hoist(child, components, false)]),
      )
    } else if (key === 'examples' || key === 'example' || key === 'default' || key === 'const') {
      copy[key] = value
    } else {
      copy[key] = hoist(value, components, false)
    }
  }
  const title = copy.title
  if (keepTop || typeof title !== 'string') return copy
  const existing = components[title]
  if (existing !== undefined && JSON.stringify(existing) !== JSON.stringify(copy)) {
    throw new Error(`two different schemas are titled ${title} in the OpenAPI document`)
  }
  components[title] = copy
  return { $ref: `#/components/schemas/${title}` }
}

/** Where schemas sit in an operation: parameters, request bodies, responses. */
function hoistOperation(operation: JsonObject, components: JsonObject): void {
  const parameters = operation.parameters
  if (Array.isArray(parameters)) {
    for (const parameter of parameters) {
      if (isObject(parameter) && parameter.schema !== undefined) {
        parameter.schema = hoist(parameter.schema, components, false)
      }
    }
  }
  const bodies = [
    operation.requestBody,
    ...(isObject(operation.responses) ? Object.values(operation.responses) : []),
  ]
  for (const body of bodies) {
    if (!isObject(body) || !isObject(body.content)) continue
    for (const media of Object.values(body.content)) {
      if (isObject(media) && media.schema !== undefined) {
        media.schema = hoist(media.schema, components, false)
      }
    }
  }
}

/** Moves the document's titled schemas to `components.schemas`, in place. */
export function hoistComponentSchemas(document: {
  paths?: Record<string, unknown>
  components?: { schemas?: Record<string, unknown> }
}): void {
  const components: JsonObject = {}
  for (const pathItem of Object.values(document.paths ?? {})) {
    if (!isObject(pathItem)) continue
    for (const operation of Object.values(pathItem)) {
      if (isObject(operation)) hoistOperation(operation, components)
    }
  }
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, ...sortByName(components) },
  }
}

function sortByName(record: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)))
}
