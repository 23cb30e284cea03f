/**
 * The largest GraphQL answer sent, as JSON text (docs/graphql.md, "Limits"). The largest a
 * real client reads is runpodctl's pod list, about 2 KB per pod; 8 MiB is thousands of pods,
 * and a string that size takes tens of milliseconds to build, where the 80 MB answer of issue
 * 16 took seconds.
 */
export const MAX_RESPONSE_BYTES = 8 * 1024 * 1024

/**
 * Whether `value` written as JSON would be longer than `limit` characters (escapes aside, so a
 * true answer is always right). Walks the value without recursion and stops as soon as the
 * limit is passed, so an answer far over it is never written out to find that out.
 */
export function jsonLongerThan(value: unknown, limit: number): boolean {
  let size = 0
  const pending: unknown[] = [value]
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next === 'string') size += next.length + 2
    else if (typeof next === 'number' || typeof next === 'boolean') size += String(next).length
    else if (next === null) size += 4
    else if (Array.isArray(next)) {
      // Brackets and the commas between the items.
      size += 1 + Math.max(1, next.length)
      for (const item of next) pending.push(item === undefined ? null : item)
    } else if (typeof next === 'object') {
      const entries = Object.entries(next as Record<string, unknown>).filter(
        ([, item]) => item !== undefined,
      )
      size += 1 + Math.max(1, entries.length)
      for (const [key, item] of entries) {
        // The quoted key and its colon.
        size += key.length + 3
        pending.push(item)
      }
    }
    if (size > limit) return true
  }
  return false
}
