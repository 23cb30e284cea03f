/**
 * What client generators need from the served OpenAPI document, counted: the figures
 * test/api/openapi-document.test.ts holds at their targets, and `tsx test/support/openapi-quality.ts
 * <document.json>` prints.
 */
import { readFileSync } from 'node:fs'

type Json = Record<string, unknown>

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A schema generators turn into a type they must invent a name for: an object of its own. */
function isAnonymousObject(schema: unknown): boolean {
  if (!isObject(schema) || typeof schema.$ref === 'string') return false
  if (schema.type === 'array') return isAnonymousObject(schema.items)
  return (
    schema.type === 'object' ||
    isObject(schema.properties) ||
    Array.isArray(schema.allOf) ||
    ((Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf)) &&
      ((schema.anyOf ?? schema.oneOf) as unknown[]).some(isAnonymousObject))
  )
}

/** `anyOf` whose members are each one value (`const`, or a one-value `enum`), nulls aside. */
function isAnyOfOfConstants(schema: Json): boolean {
  const members = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined
  if (!Array.isArray(members)) return false
  const values = members.filter((m) => !(isObject(m) && m.type === 'null' && !('enum' in m)))
  return (
    values.length > 0 &&
    values.every(
      (m) => isObject(m) && ('const' in m || (Array.isArray(m.enum) && m.enum.length === 1)),
    )
  )
}

/** Every schema inside `schema` (itself included), each once, with the count of examples. */
function walkSchemas(
  schema: unknown,
  visit: (schema: Json, depth: number) => void,
  depth = 0,
): void {
  if (Array.isArray(schema)) {
    for (const item of schema) walkSchemas(item, visit, depth)
    return
  }
  if (!isObject(schema)) return
  visit(schema, depth)
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'examples' || key === 'example' || key === 'default' || key === 'const') continue
    if (key === 'properties' || key === 'patternProperties' || key === '$defs') {
      if (isObject(value)) {
        for (const child of Object.values(value)) walkSchemas(child, visit, depth + 1)
      }
    } else {
      // The parts of an allOf are one type with the schema composing them: no name of their own.
      walkSchemas(value, visit, key === 'allOf' ? depth : depth + 1)
    }
  }
}

export interface OpenAPIQuality {
  operations: number
  operationsWithoutDescription: string[]
  responses: number
  defaultResponseDescriptions: number
  inlineRequestBodies: string[]
  inlineSuccessBodies: string[]
  /** Error answers written out in place rather than a reusable `components.responses` entry. */
  inlineErrorResponses: number
  /** Objects inside named schemas that generators would have to name themselves. */
  anonymousNestedObjects: string[]
  anyOfOfConstants: number
  /** Operations without an example of their JSON request body (of those that take one). */
  requestsWithoutExample: string[]
  /** Operations without an example of their JSON success answer (of those that answer one). */
  answersWithoutExample: string[]
  examples: number
  componentResponses: number
  componentParameters: number
  servers: unknown
}

/** The figures of `document`. */
export function measureOpenAPI(document: Json): OpenAPIQuality {
  const components = (document.components ?? {}) as Json
  const schemas = (components.schemas ?? {}) as Json
  const componentResponses = (components.responses ?? {}) as Json
  const resolveResponse = (response: unknown): Json => {
    if (isObject(response) && typeof response.$ref === 'string') {
      return componentResponses[response.$ref.split('/').pop()!] as Json
    }
    return response as Json
  }
  const quality: OpenAPIQuality = {
    operations: 0,
    operationsWithoutDescription: [],
    responses: 0,
    defaultResponseDescriptions: 0,
    inlineRequestBodies: [],
    inlineSuccessBodies: [],
    inlineErrorResponses: 0,
    anonymousNestedObjects: [],
    anyOfOfConstants: 0,
    requestsWithoutExample: [],
    answersWithoutExample: [],
    examples: 0,
    componentResponses: Object.keys(componentResponses).length,
    componentParameters: Object.keys((components.parameters ?? {}) as Json).length,
    servers: document.servers,
  }
  const hasExample = (media: Json): boolean => {
    if (media.example !== undefined || isObject(media.examples)) return true
    const schema = media.schema
    if (!isObject(schema)) return false
    const named = typeof schema.$ref === 'string' ? schemas[schema.$ref.split('/').pop()!] : schema
    return isObject(named) && (named.example !== undefined || Array.isArray(named.examples))
  }
  for (const [path, item] of Object.entries((document.paths ?? {}) as Json)) {
    for (const method of METHODS) {
      const operation = (item as Json)[method]
      if (!isObject(operation)) continue
      const where = `${method.toUpperCase()} ${path}`
      quality.operations += 1
      if (typeof operation.description !== 'string' || !/\S/.test(operation.description)) {
        quality.operationsWithoutDescription.push(where)
      }
      const requestBody = operation.requestBody as Json | undefined
      const requestMedia = (requestBody?.content as Json | undefined)?.['application/json']
      if (isObject(requestMedia)) {
        if (isAnonymousObject(requestMedia.schema)) quality.inlineRequestBodies.push(where)
        if (!hasExample(requestMedia)) quality.requestsWithoutExample.push(where)
      }
      let answersJson = false
      let answerExample = false
      for (const [code, raw] of Object.entries((operation.responses ?? {}) as Json)) {
        quality.responses += 1
        const response = resolveResponse(raw)
        if (response.description === 'Default Response') quality.defaultResponseDescriptions += 1
        const content = (response.content ?? {}) as Json
        if (code.startsWith('2')) {
          const media = content['application/json']
          if (isObject(media)) {
            answersJson = true
            answerExample ||= hasExample(media)
            if (isAnonymousObject(media.schema))
              quality.inlineSuccessBodies.push(`${where} ${code}`)
          }
        } else if (!isObject(raw) || typeof raw.$ref !== 'string') {
          quality.inlineErrorResponses += 1
        }
      }
      if (answersJson && !answerExample) quality.answersWithoutExample.push(where)
    }
  }
  for (const [name, schema] of Object.entries(schemas)) {
    walkSchemas(schema, (child, depth) => {
      if (isAnyOfOfConstants(child)) quality.anyOfOfConstants += 1
      if (Array.isArray(child.examples)) quality.examples += child.examples.length
      if (child.example !== undefined) quality.examples += 1
      // The named schema itself, and the parts of an allOf composing it, are named.
      if (depth > 0 && isObject(child.properties) && child.type === 'object') {
        quality.anonymousNestedObjects.push(`${name}: ${Object.keys(child.properties).join(',')}`)
      }
    })
  }
  // Schemas left in operations (parameters, bodies) count too.
  walkSchemas(document.paths, (child) => {
    if (isAnyOfOfConstants(child)) quality.anyOfOfConstants += 1
    if (child.example !== undefined && !('in' in child)) quality.examples += 1
    if (isObject(child.examples)) quality.examples += Object.keys(child.examples).length
  })
  return quality
}

if (process.argv[1]?.endsWith('openapi-quality.ts')) {
  const file = process.argv[2]
  if (!file) throw new Error('usage: tsx test/support/openapi-quality.ts <openapi.json>')
  const quality = measureOpenAPI(JSON.parse(readFileSync(file, 'utf8')) as Json)
  const counted = Object.fromEntries(
    Object.entries(quality).map(([key, value]) => [
      key,
      Array.isArray(value) ? value.length : value,
    ]),
  )
  console.log(JSON.stringify(counted, null, 2))
  if (process.argv.includes('--list')) console.log(JSON.stringify(quality, null, 2))
}
