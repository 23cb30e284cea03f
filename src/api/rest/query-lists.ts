import { AppError } from '../../shared/app-error.js'

/** Splits a comma-separated query value (`style: form, explode: false`). */
export function commaValues(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined
  return value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/** Like commaValues, but every value must be one of `allowed` (422 naming the bad ones). */
export function enumValues<T extends string>(
  name: string,
  value: string | undefined,
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
