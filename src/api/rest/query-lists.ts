import { Type, type TProperties } from '@sinclair/typebox'
import { AppError } from '../../shared/app-error.js'

/**
 * A list in the query string. Declared as RunPod declares its lists (`style: form, explode:
 * false`, i.e. `x=a,b`), and accepted repeated too (`x=a&x=b`), the default of several client
 * generators: the query parser gives an array for a repeated name, and the text validator's
 * `coerceTypes: 'array'` turns a single value into a one-item array.
 */
export const QueryList = (description: string) =>
  Type.Optional(Type.Array(Type.String(), { description: `${description} (a,b or x=a&x=b)` }))

/**
 * A query-string schema whose lists are declared `style: form, explode: false` (@fastify/swagger
 * reads both from the object; for its single values they change nothing).
 */
export const QueryWithLists = <T extends TProperties>(properties: T) =>
  Type.Object(properties, { style: 'form', explode: false })

/** The values of a query list, in either form (`a,b` or repeated), without empty ones. */
export function commaValues(value: string | readonly string[] | undefined): string[] | undefined {
  if (value === undefined) return undefined
  return (typeof value === 'string' ? [value] : value)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/** Like commaValues, but every value must be one of `allowed` (422 naming the bad ones). */
export function enumValues<T extends string>(
  name: string,
  value: string | readonly string[] | undefined,
  allowed: readonly T[],
): T[] | undefined {
  const values = commaValues(value)
  if (!values) return undefined
  const bad = values.filter((v) => !allowed.includes(v as T))
  if (bad.length > 0) {
    const errors = bad.map((v) => `querystring.${name}: "${v}" is not one of ${allowed.join(', ')}`)
    throw new AppError('VALIDATION_FAILED', errors.join('; '), { errors })
  }
  return values as T[]
}
