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

type Validate = ReturnType<Ajv['compile']>

/**
 * Each distinct schema's validator, kept once per process and part, and compiled at its first
 * use: ajv keeps what it compiled by the schema object, so an equal schema given as another
 * object (another app's, or another route's) was compiled and kept again (see
 * response-serializers.ts), and compiling every route's at start took about 180 ms of a
 * `podyard serve`'s start. fastify reads a failed validation's `errors` from the function it was
 * given, so the one given here passes on those of the compiled one. `compilePendingValidators`
 * compiles the rest at once.
 */
const compiled = new Map<
  string,
  { validate: (data: unknown) => boolean; compile: () => Validate }
>()

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const body = httpPart === 'body'
  const key = `${body ? 'body' : 'text'} ${JSON.stringify(schema)}`
  let entry = compiled.get(key)
  if (entry === undefined) {
    let done: Validate | undefined
    const compile = () => (done ??= (body ? bodyAjv : textAjv).compile(schema as object))
    const validate = (data: unknown): boolean => {
      const real = done ?? compile()
      const valid = real(data) as boolean
      validate.errors = real.errors
      return valid
    }
    validate.errors = null as Validate['errors']
    entry = { validate, compile }
    compiled.set(key, entry)
  }
  return entry.validate
}

/** Compiles every validator not yet used (returns how many this process has); throws for a schema ajv refuses. */
export function compilePendingValidators(): number {
  for (const entry of compiled.values()) entry.compile()
  return compiled.size
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
