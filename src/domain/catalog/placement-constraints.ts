import { AppError } from '../../shared/app-error.js'
import { LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, POOL_LABEL, type Host } from './fleet.js'

/** How an asked label compares with a host's; the ordering ones compare numbers. */
export const LABEL_OPERATORS = ['>=', '<=', '!=', '=', '>', '<'] as const
export type LabelOperator = (typeof LABEL_OPERATORS)[number]

/** A label a pod or endpoint asks its host to have (`ib=true`, `driver>=550`). */
export interface LabelConstraint {
  key: string
  op: LabelOperator
  value: string
}

const NUMBER = /^-?\d+(?:\.\d+)?$/
const ORDERING: ReadonlySet<LabelOperator> = new Set(['>=', '<=', '>', '<'])

/** `driver>=550` as written; the form every message uses. */
export function constraintText(c: LabelConstraint): string {
  return `${c.key}${c.op}${c.value}`
}

/**
 * Reads `key=value`, `key!=value` or `key>=number` (also `>`, `<=`, `<`): the error says what
 * is wrong, or undefined when it is a constraint.
 */
export function parseLabelConstraint(text: string): LabelConstraint | string {
  const match = /^([^=!<>]+)(>=|<=|!=|=|>|<)(.*)$/.exec(text.trim())
  if (!match)
    return `"${text}" is not a label constraint (key=value, key!=value, key>=number: ib=true, driver>=550)`
  const [, key = '', op = '=', value = ''] = match
  if (!LABEL_KEY_PATTERN.test(key))
    return `"${text}": "${key}" is not a label key (a-z, 0-9 and ._/-, e.g. ib or pool)`
  if (!LABEL_VALUE_PATTERN.test(value))
    return `"${text}": "${value}" is not a label value (A-Z, a-z, 0-9 and ._-)`
  if (ORDERING.has(op as LabelOperator) && !NUMBER.test(value))
    return `"${text}": ${op} compares numbers, and "${value}" is not one`
  return { key, op: op as LabelOperator, value }
}

/** Each text as a constraint, or the first problem; [] for none. */
export function parseLabelConstraints(
  texts: readonly string[] | undefined,
): LabelConstraint[] | string {
  const out: LabelConstraint[] = []
  for (const text of texts ?? []) {
    const parsed = parseLabelConstraint(text)
    if (typeof parsed === 'string') return parsed
    out.push(parsed)
  }
  return out
}

/**
 * A create's or update's hostLabels, checked and written the one way (`driver>=550`); 422
 * naming the first that is not a constraint.
 */
export function checkedHostLabels(texts: readonly string[]): string[] {
  const parsed = parseLabelConstraints(texts)
  if (typeof parsed === 'string')
    throw new AppError('VALIDATION_FAILED', `hostLabels: ${parsed}`, {
      errors: [`hostLabels: ${parsed}`],
    })
  return [...new Set(parsed.map(constraintText))]
}

/** Stored constraint texts (checked when they were given) as constraints. */
export function labelConstraintsOf(texts: readonly string[]): LabelConstraint[] {
  return texts.flatMap((text) => {
    const parsed = parseLabelConstraint(text)
    return typeof parsed === 'string' ? [] : [parsed]
  })
}

/** Whether the host's labels satisfy the constraint; a missing label never does. */
export function hostMeets(host: Host, c: LabelConstraint): boolean {
  const have = host.labels?.[c.key]
  if (have === undefined) return false
  if (c.op === '=') return have === c.value
  if (c.op === '!=') return have !== c.value
  if (!NUMBER.test(have)) return false
  const a = Number(have)
  const b = Number(c.value)
  if (c.op === '>=') return a >= b
  if (c.op === '<=') return a <= b
  if (c.op === '>') return a > b
  return a < b
}

/** The host's pool (its `pool` label), or undefined for a host open to every account. */
export function poolOf(host: Host): string | undefined {
  return host.labels?.[POOL_LABEL]
}

/** A host in a pool takes only accounts bound to it; a host in no pool takes every account. */
export function hostOpenTo(host: Host, accountPools: readonly string[] | undefined): boolean {
  const pool = poolOf(host)
  return pool === undefined || (accountPools ?? []).includes(pool)
}

/** Pool names: as label values. */
export function isPoolName(name: string): boolean {
  return LABEL_VALUE_PATTERN.test(name)
}
