import type { ErrorCode } from './error-codes.js'

export interface AppErrorOptions {
  /** Individual failures, each naming a location and the problem. */
  errors?: string[]
  /** For RATE_LIMITED: whole seconds until the exhausted window resets. */
  retryAfterSeconds?: number
  cause?: unknown
}

/** An expected failure that a caller should see, with a code from the registry. */
export class AppError extends Error {
  readonly code: ErrorCode
  readonly detail: string
  readonly errors: string[] | undefined
  readonly retryAfterSeconds: number | undefined

  constructor(code: ErrorCode, detail: string, options: AppErrorOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AppError'
    this.code = code
    this.detail = detail
    this.errors = options.errors
    this.retryAfterSeconds = options.retryAfterSeconds
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError
}
