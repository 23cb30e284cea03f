import { Ajv } from 'ajv'
import addFormatsModule from 'ajv-formats'

// ajv-formats ships CommonJS with a default export property.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

/** `schema` with every object closed: a property it does not name is an error. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed)
  if (schema === null || typeof schema !== 'object') return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) copy[key] = closed(value)
  if (copy.type === 'object' && copy.properties !== undefined && !('additionalProperties' in copy))
    copy.additionalProperties = false
  return copy
}

/**
 * A check that an answer is exactly what a response schema says: every field of the right type
 * and format, and no field the schema does not name (routes that write their answers with
 * JSON.stringify rather than the schema's serializer rely on it). Returns Ajv's errors.
 */
export function conformanceTo(schema: object): (value: unknown) => string[] {
  const ajv = new Ajv({ allErrors: true, strict: false })
  addFormats(ajv)
  const validate = ajv.compile(closed(schema) as object)
  return (value) =>
    validate(value)
      ? []
      : (validate.errors ?? []).map(
          (e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
        )
}
