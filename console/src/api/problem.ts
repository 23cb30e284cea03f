/**
 * An API error as the console shows it: the problem+json body (docs/api.md, "Errors") of a
 * failed call, with each failing field of `errors` on its own line.
 */
export class ApiError extends Error {
  readonly status: number
  readonly title: string
  readonly errors: string[]

  constructor(status: number, title: string, detail: string, errors: string[] = []) {
    super(detail)
    this.name = 'ApiError'
    this.status = status
    this.title = title
    this.errors = errors
  }
}

interface ProblemLike {
  title?: unknown
  detail?: unknown
  errors?: unknown
  error?: unknown
  message?: unknown
}

/** The ApiError of a failed response whose body (if any) was already read as `body`. */
export function apiErrorOf(response: Response, body: unknown): ApiError {
  const problem = (typeof body === 'object' && body !== null ? body : {}) as ProblemLike
  const detail =
    typeof problem.detail === 'string'
      ? problem.detail
      : typeof problem.error === 'string'
        ? problem.error
        : typeof problem.message === 'string'
          ? problem.message
          : `the server answered ${response.status} ${response.statusText}`.trim()
  const errors = Array.isArray(problem.errors)
    ? problem.errors.filter((entry): entry is string => typeof entry === 'string')
    : []
  const title = typeof problem.title === 'string' ? problem.title : response.statusText
  return new ApiError(response.status, title, detail, errors)
}

/** Any thrown value as an ApiError (a network failure has status 0). */
export function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof Error && error.name === 'AbortError')
    return new ApiError(0, 'Aborted', 'aborted')
  const message = error instanceof Error ? error.message : String(error)
  return new ApiError(0, 'Network error', `the server could not be reached: ${message}`)
}
