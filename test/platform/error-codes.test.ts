import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { httpStatusOf } from '../../src/api/http/error-status.js'
import { errorCodes } from '../../src/shared/error-codes.js'

/**
 * The error-code registry is pinned: clients match on these codes (GraphQL's
 * `extensions.code`) and statuses, so a code added, removed, renamed or moved to another status
 * is a deliberate change, made here and in docs/api.md's table in the same commit.
 */
const PINNED: Record<string, number> = {
  MALFORMED_REQUEST: 400,
  VALIDATION_FAILED: 422,
  RULE_CONFLICT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  INVALID_STATE: 409,
  NO_CAPACITY: 409,
  GONE: 410,
  RATE_LIMITED: 429,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  RESPONSE_TOO_LARGE: 400,
  QUERY_TOO_EXPENSIVE: 400,
  DOCUMENT_TOO_LARGE: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYMENT_REQUIRED: 402,
  SPEND_LIMIT_EXCEEDED: 402,
  QUOTA_EXCEEDED: 403,
  NOT_READY: 503,
  NOT_OFFERED: 501,
  INTERNAL: 500,
}

describe('the error-code registry', () => {
  it('has exactly the pinned codes, each with its pinned HTTP status', () => {
    const statuses = Object.fromEntries(
      Object.keys(errorCodes).map((code) => [
        code,
        httpStatusOf[code as keyof typeof errorCodes].status,
      ]),
    )
    expect(statuses).toEqual(PINNED)
    expect(Object.keys(errorCodes)).toHaveLength(25)
  })

  it("is listed in docs/api.md's table, code by code, with the same status and meaning", () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'api.md'), 'utf8')
    const rows = [...doc.matchAll(/^\| `([A-Z_]+)`\s*\| (\d{3})\s*\| (.+?)\s*\|$/gm)].map(
      ([, code, status, meaning]) => [code, Number(status), meaning],
    )
    expect(rows).toEqual(
      Object.entries(errorCodes).map(([code, meaning]) => [code, PINNED[code], meaning]),
    )
  })
})
