/** What a thrown value says, for a log line. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The reason a run's signal is aborted with: an AbortError, as fetch and timers throw. */
export function abortError(message: string): Error {
  return new DOMException(message, 'AbortError')
}
