import { Ajv, type ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

// ajv-formats ships CommonJS with a default export property.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

/**
 * Bodies are validated strictly: no coercion ("10" is not an integer) and no silent removal of
 * unknown properties (they are errors, spec Rule 5). Query strings and path parameters arrive
 * as text, so they are coerced.
 */
function makeAjv(coerceTypes: false | 'array'): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false,
    useDefaults: true,
    coerceTypes,
    strict: false,
  })
  addFormats(ajv)
  return ajv
}

const bodyAjv = makeAjv(false)
const textAjv = makeAjv('array')

/**
 * Each distinct schema's validator, compiled once per process and part: ajv keeps what it
 * compiled by the schema object, so an equal schema given as another object (another app's, or
 * another route's) was compiled and kept again (see response-serializers.ts).
 */
const compiled = new Map<string, ReturnType<Ajv['compile']>>()

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const body = httpPart === 'body'
  const key = `${body ? 'body' : 'text'} ${JSON.stringify(schema)}`
  let validate = compiled.get(key)
  if (validate === undefined) {
    validate = (body ? bodyAjv : textAjv).compile(schema as object)
    compiled.set(key, validate)
  }
  return validate
}

function pointerToPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((segment) => (/^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`))
    .join('')
}

/** One line per failure, `<location>: <problem>`, e.g. `body.gpu.count: must be >= 1`. */
export function describeValidationErrors(part: string, errors: ErrorObject[]): string[] {
  const lines = errors
    .filter((e) => e.keyword !== 'if' && !(e.keyword === 'anyOf' && errors.length > 1))
    .map((error) => {
      const at = `${part}${pointerToPath(error.instancePath)}`
      const params = error.params as Record<string, unknown>
      switch (error.keyword) {
        case 'required':
          return `${at}.${String(params.missingProperty)}: is required`
        case 'additionalProperties':
          return `${at}.${String(params.additionalProperty)}: unknown property`
        case 'enum':
          return `${at}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
        case 'const':
          return `${at}: must be ${JSON.stringify(params.allowedValue)}`
        default:
          return `${at}: ${error.message ?? 'is invalid'}`
      }
    })
  return [...new Set(lines)]
}
