import { ApiError, ServerUnreachableError } from '../client/api-client.js'
import { isAppError } from '../shared/app-error.js'
import type { ErrorCode } from '../shared/error-codes.js'
import { ProfileError } from './profiles.js'
import { UsageError } from './usage-error.js'

/**
 * The CLI's exit statuses (docs/cli.md, "Exit codes"), so scripts can tell a typo from a wrong
 * key from a missing pod from a server that is down without reading the message.
 */
export const ExitCode = {
  ok: 0,
  /** Anything else: a job that failed, a wait that ran out, a proxy's page. */
  other: 1,
  /**
   * The command line (a flag, `--input` that is not JSON, an input file it cannot read, a
   * profile, or the server's 400/422 on what it carried) is wrong.
   */
  usage: 2,
  /** 401 or 403: no key, a wrong key, or a key without the right. */
  auth: 3,
  notFound: 4,
  /** 409: a name taken, a resource in a state that refuses the change. */
  conflict: 5,
  /** No answer at all: nothing listening, DNS, TLS, a reset connection. */
  unreachable: 6,
  /** 5xx. */
  server: 7,
} as const

/** The exit status for an HTTP status the server refused a request with. */
export function exitCodeOfStatus(status: number): number {
  if (status === 400 || status === 422) return ExitCode.usage
  if (status === 401 || status === 403) return ExitCode.auth
  if (status === 404) return ExitCode.notFound
  if (status === 409) return ExitCode.conflict
  if (status >= 500) return ExitCode.server
  return ExitCode.other
}

/** The exit status for what a command threw (commander's own errors are usage, in main). */
export function exitCodeOf(error: unknown): number {
  if (error instanceof ServerUnreachableError) return ExitCode.unreachable
  if (error instanceof ProfileError || error instanceof UsageError) return ExitCode.usage
  if (error instanceof ApiError) {
    if (error.problem !== undefined) return exitCodeOfStatus(error.status)
    // Not podyard's answer (a proxy's page): its 5xx says the server behind it failed; its 404
    // or sign-in page says nothing about podyard's resources.
    return error.status >= 500 ? ExitCode.server : ExitCode.other
  }
  // The commands that work on the store directly (keys, accounts, credits) meet these.
  if (isAppError(error)) return APP_ERROR_EXIT[error.code] ?? ExitCode.other
  return ExitCode.other
}

const APP_ERROR_EXIT: Partial<Record<ErrorCode, number>> = {
  MALFORMED_REQUEST: ExitCode.usage,
  VALIDATION_FAILED: ExitCode.usage,
  RULE_CONFLICT: ExitCode.usage,
  UNAUTHENTICATED: ExitCode.auth,
  FORBIDDEN: ExitCode.auth,
  NOT_FOUND: ExitCode.notFound,
  INVALID_STATE: ExitCode.conflict,
  INTERNAL: ExitCode.server,
}
