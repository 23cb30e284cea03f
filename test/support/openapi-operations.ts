import type { JsonSchema } from '../fuzz/schema-arbitrary.js'

/** One operation of the served OpenAPI document, its named schemas written out in place. */
export interface DocumentOperation {
  /** Upper case: `GET`. */
  method: string
  /** As the document writes it: `/v2/pods/{id}`. */
  path: string
  operationId: string
  tags: string[]
  parameters: Array<{ in: string; name: string; required?: boolean; schema: JsonSchema }>
  /** The JSON request body's schema, when the operation takes one. */
  body?: JsonSchema
  /**
   * Each status the document declares (`default` included), with its media types and their
   * schemas; an empty object for an answer without content (204).
   */
  responses: Record<string, Record<string, JsonSchema>>
}

/** The served document, as far as these readers need it. */
export interface OpenAPIDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId?: string
        tags?: string[]
        parameters?: DocumentOperation['parameters']
        requestBody?: { content?: Record<string, { schema: JsonSchema }> }
        responses?: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>
      }
    >
  >
  components?: {
    schemas?: Record<string, JsonSchema>
    /** Shared answers (errors) and parameters the operations refer to with `$ref`. */
    responses?: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>
    parameters?: Record<string, unknown>
  }
}

const METHODS = new Set(['get', 'put', 'post', 'patch', 'delete', 'head', 'options'])

/**
 * Every operation of the served document (`/v2/openapi.json`), in its order: what the fuzz
 * suite and the content-type check send requests to, so that a new route is covered the day
 * it is documented.
 */
export function operationsOf(document: OpenAPIDocument): DocumentOperation[] {
  const named = document.components?.schemas ?? {}
  const inline = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(inline)
    if (typeof value !== 'object' || value === null) return value
    const ref = (value as { $ref?: unknown }).$ref
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      return inline(named[ref.slice('#/components/schemas/'.length)])
    }
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, inline(child)]))
  }
  /** A shared answer or parameter in place of its reference. */
  const shared = <T>(value: T, kind: 'responses' | 'parameters'): T => {
    const ref = (value as { $ref?: unknown } | undefined)?.$ref
    const prefix = `#/components/${kind}/`
    if (typeof ref !== 'string' || !ref.startsWith(prefix)) return value
    return (document.components?.[kind]?.[ref.slice(prefix.length)] ?? value) as T
  }
  const operations: DocumentOperation[] = []
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue
      const responses: DocumentOperation['responses'] = {}
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        responses[status] = Object.fromEntries(
          Object.entries(shared(response, 'responses').content ?? {}).map(([type, media]) => [
            type,
            (inline(media.schema) as JsonSchema | undefined) ?? {},
          ]),
        )
      }
      const json = op.requestBody?.content?.['application/json']
      operations.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId ?? `${method} ${path}`,
        tags: op.tags ?? [],
        parameters:
          (inline(op.parameters?.map((p) => shared(p, 'parameters'))) as
            DocumentOperation['parameters'] | undefined) ?? [],
        ...(json ? { body: inline(json.schema) as JsonSchema } : {}),
        responses,
      })
    }
  }
  return operations
}
