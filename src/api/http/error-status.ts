import type { ErrorCode } from '../../shared/error-codes.js'

/** The only place error codes become HTTP statuses and titles. */
export const httpStatusOf: Record<ErrorCode, { status: number; title: string }> = {
  MALFORMED_REQUEST: { status: 400, title: 'Bad Request' },
  VALIDATION_FAILED: { status: 422, title: 'Unprocessable Entity' },
  RULE_CONFLICT: { status: 400, title: 'Bad Request' },
  UNAUTHENTICATED: { status: 401, title: 'Unauthorized' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  NOT_FOUND: { status: 404, title: 'Not Found' },
  ROUTE_NOT_FOUND: { status: 404, title: 'Not Found' },
  INVALID_STATE: { status: 409, title: 'Conflict' },
  NO_CAPACITY: { status: 409, title: 'Conflict' },
  GONE: { status: 410, title: 'Gone' },
  RATE_LIMITED: { status: 429, title: 'Too Many Requests' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload Too Large' },
  URI_TOO_LONG: { status: 414, title: 'URI Too Long' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request Header Fields Too Large' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request Timeout' },
  RESPONSE_TOO_LARGE: { status: 400, title: 'Bad Request' },
  QUERY_TOO_EXPENSIVE: { status: 400, title: 'Bad Request' },
  DOCUMENT_TOO_LARGE: { status: 400, title: 'Bad Request' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported Media Type' },
  PAYMENT_REQUIRED: { status: 402, title: 'Payment Required' },
  SPEND_LIMIT_EXCEEDED: { status: 402, title: 'Payment Required' },
  NOT_READY: { status: 503, title: 'Service Unavailable' },
  NOT_OFFERED: { status: 501, title: 'Not Implemented' },
  INTERNAL: { status: 500, title: 'Internal Server Error' },
}
