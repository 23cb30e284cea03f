/**
 * PostgreSQL's answers that mean "run the same transaction again": a serialization failure
 * (40001) and a deadlock it broke by killing this transaction (40P01). Nothing of the
 * transaction was kept, so running it again is safe, and usually succeeds at once.
 */
const RETRYABLE_CODES = new Set(['40001', '40P01'])

/** How many times a transaction runs at most (the first run and the retries). */
export const LOCK_CONFLICT_ATTEMPTS = 5

export function isLockConflict(error: unknown): boolean {
  for (let cause = error, depth = 0; cause && depth < 4; depth++) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === 'string' && RETRYABLE_CODES.has(code)) return true
    cause = (cause as { cause?: unknown }).cause
  }
  return false
}

/**
 * Runs `work` (a whole transaction) and runs it again when the database answered a
 * serialization failure or a deadlock, up to `attempts` runs in all, with a short random pause
 * between them so that the two parties do not meet again in step. `work` must start from
 * scratch each time: whatever it collected on a failed run is gone with the rollback.
 */
export async function retryLockConflicts<T>(
  work: () => Promise<T>,
  attempts = LOCK_CONFLICT_ATTEMPTS,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (error) {
      if (attempt >= attempts || !isLockConflict(error)) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt))
    }
  }
}
