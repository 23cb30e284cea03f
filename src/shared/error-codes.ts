/**
 * The one registry of error codes. A code names a kind of failure; it is never reused for
 * another meaning. HTTP statuses and GraphQL mappings live in `api/`, not here.
 */
export const errorCodes = {
  MALFORMED_REQUEST: 'the request could not be parsed (malformed JSON, bad header)',
  VALIDATION_FAILED: 'the request parsed but failed schema validation',
  RULE_CONFLICT: 'the request breaks a rule of the API (conflicting fields, unknown reference)',
  UNAUTHENTICATED: 'no valid API key was presented',
  FORBIDDEN: 'the API key is valid but lacks the permission',
  NOT_FOUND: 'the resource does not exist or belongs to another account',
  ROUTE_NOT_FOUND: 'no route matches the method and path',
  INVALID_STATE: 'the action is not valid for the current state of the resource',
  NO_CAPACITY: 'no host has the free capacity the request needs',
  GONE: 'the resource existed but its lifetime is over (an expired signed URL)',
  RATE_LIMITED: 'a rate-limit window is exhausted',
  PAYLOAD_TOO_LARGE: 'the request body is larger than allowed',
  URI_TOO_LONG: 'a path segment of the request is longer than allowed',
  HEADERS_TOO_LARGE: 'the request line and headers are larger than allowed',
  REQUEST_TIMEOUT: 'the request did not arrive in full within the time allowed',
  RESPONSE_TOO_LARGE: 'the answer would be larger than the service sends in one response',
  QUERY_TOO_EXPENSIVE: 'running the GraphQL request would cost more than one request may',
  DOCUMENT_TOO_LARGE:
    'the GraphQL document has more tokens, definitions, fragment spreads, directives or nesting than one request may',
  UNSUPPORTED_MEDIA_TYPE: 'the request body has a content type that is not accepted',
  PAYMENT_REQUIRED:
    'the account has no credits left for this (balance at or below zero, or not enough for the price)',
  SPEND_LIMIT_EXCEEDED: 'the hourly cost would take the account above its spend limit',
  QUOTA_EXCEEDED:
    'the request would take the account above a quota the admin set (GPUs, pods, workers, network-volume GB)',
  NOT_READY: 'the service is not ready to serve requests',
  NOT_OFFERED:
    "the operation is part of RunPod's API but needs a service this platform does not run",
  INTERNAL: 'an unexpected fault inside the service',
} as const

export type ErrorCode = keyof typeof errorCodes
