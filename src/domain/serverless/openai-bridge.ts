/**
 * The OpenAI-compatible route's translation (docs/job-api.md "OpenAI-compatible route";
 * wire-compat §4.1, §5.9): an OpenAI request becomes the job input worker-vllm reads, and the
 * job's output or stream chunks become what the OpenAI API would answer. Pure: the HTTP side
 * (statuses, headers, the connection) is in api/jobs/openai-routes.ts.
 */
import { AppError } from '../../shared/app-error.js'
import type { JobView } from './job.js'

/** What a worker receives: a bare `openai_route` means GET (worker-vllm's `/v1/models`). */
export interface OpenAIJobInput {
  openai_route: string
  openai_input?: Record<string, unknown>
}

/** OpenAI's error object, the `error` of `{"error": {...}}` bodies and stream events. */
export interface OpenAIError {
  message: string
  type: string
  param: string | null
  /** OpenAI sends strings; vLLM's error responses carry the HTTP status as a number. */
  code: string | number | null
}

/** Why a job gives no answer; the API turns each into an HTTP status. */
export type OpenAIFailureReason =
  /** The worker reported an error (a FAILED job, or an error object as its output). */
  | 'worker-error'
  | 'timed-out'
  | 'cancelled'
  /** Still IN_QUEUE or IN_PROGRESS when the route stopped waiting. */
  | 'pending'
  /** Finished, but with nothing an OpenAI client could read as one response. */
  | 'unexpected-output'

export interface OpenAIFailure {
  reason: OpenAIFailureReason
  error: OpenAIError
}

export type OpenAIAnswer = { ok: true; body: unknown } | { ok: false; failure: OpenAIFailure }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** `/v1/<rest>` for the path after `/openai/v1/` (query excluded), with slashes collapsed. */
export function openaiRoute(rest: string): string {
  return `/v1/${rest.replace(/^\/+/, '').replace(/\/{2,}/g, '/')}`
}

/**
 * The job input of an OpenAI request. A GET carries no body (`{"openai_route"}` alone, §5.9); a
 * POST's body must be a JSON object, the OpenAI request, else 400.
 */
export function openaiJobInput(
  route: string,
  method: 'GET' | 'POST',
  body: unknown,
): OpenAIJobInput {
  if (method === 'GET') return { openai_route: route }
  if (!isObject(body)) {
    const found =
      body === undefined ? 'an empty body' : Array.isArray(body) ? 'an array' : typeof body
    throw new AppError(
      'MALFORMED_REQUEST',
      `the body must be a JSON object (the OpenAI request), not ${found}`,
      { errors: ['body: must be a JSON object'] },
    )
  }
  return { openai_route: route, openai_input: body }
}

/** Whether the client asked for server-sent events (OpenAI's `"stream": true`). */
export function wantsStream(input: OpenAIJobInput): boolean {
  return input.openai_input?.stream === true
}

/**
 * Whether a chunk or output is an error rather than a response: `{"error": ...}` (worker-vllm's
 * and runpod-python's shape) or vLLM's older `{"object": "error", "message": ...}`.
 */
export function isErrorPayload(value: unknown): boolean {
  if (!isObject(value)) return false
  if (value.object === 'error' && typeof value.message === 'string') return true
  return value.error !== undefined && value.error !== null && value.object === undefined
}

const WORKER_ERROR_TYPE = 'worker_error'

/**
 * The parts of an error a worker reported, in whatever shape: OpenAI's `{"error": {...}}`,
 * vLLM's flat error object, runpod-python's exception JSON (`error_message`), a Python `str()`
 * of a dict (runpod-python turns worker-vllm's `{"error": {...}}` into one, §5.9), or text.
 */
export function workerError(value: unknown): OpenAIError {
  const fallback = (message: string): OpenAIError => ({
    message,
    type: WORKER_ERROR_TYPE,
    param: null,
    code: null,
  })
  if (typeof value === 'string') {
    const text = value.trim()
    if (text.startsWith('{') || text.startsWith('"')) {
      try {
        const parsed = JSON.parse(text) as unknown
        if (isObject(parsed) || typeof parsed === 'string') return workerError(parsed)
      } catch {
        const fromRepr = pythonReprError(text)
        if (fromRepr) return fromRepr
      }
    }
    return fallback(text === '' ? 'the worker reported an error without a message' : text)
  }
  if (isObject(value)) {
    if (value.error !== undefined && value.error !== null && value.object !== 'error') {
      return workerError(value.error)
    }
    const message =
      typeof value.message === 'string'
        ? value.message
        : typeof value.error_message === 'string'
          ? value.error_message
          : undefined
    if (message === undefined) return fallback(JSON.stringify(value))
    return {
      message,
      type: typeof value.type === 'string' && value.type !== '' ? value.type : WORKER_ERROR_TYPE,
      param: typeof value.param === 'string' ? value.param : null,
      code: typeof value.code === 'string' || typeof value.code === 'number' ? value.code : null,
    }
  }
  return fallback(
    value === undefined || value === null ? 'the worker failed' : JSON.stringify(value),
  )
}

/** `{'message': '...', 'type': '...', 'code': 400}` as Python prints a dict; undefined if not one. */
function pythonReprError(text: string): OpenAIError | undefined {
  const quoted = String.raw`(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")`
  const field = (name: string) => {
    const match = new RegExp(String.raw`'${name}':\s*${quoted}`).exec(text)
    if (!match) return undefined
    return (match[1] ?? match[2] ?? '').replace(/\\(.)/g, (_, c: string) =>
      c === 'n' ? '\n' : c === 't' ? '\t' : c,
    )
  }
  const message = field('message')
  if (message === undefined) return undefined
  const numericCode = /'code':\s*(\d+)/.exec(text)
  return {
    message,
    type: field('type') || WORKER_ERROR_TYPE,
    param: field('param') ?? null,
    code: numericCode ? Number(numericCode[1]) : (field('code') ?? null),
  }
}

/** A failure of our own making, with our code. */
function failure(reason: OpenAIFailureReason, message: string, type: string, code: string) {
  return { ok: false as const, failure: { reason, error: { message, type, param: null, code } } }
}

/**
 * The data of each SSE event in `text` (`data:` lines joined by newlines), `[DONE]` excluded.
 */
export function sseEventData(text: string): string[] {
  const events: string[] = []
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
    if (data.length === 0) continue
    const joined = data.join('\n')
    if (joined.trim() !== '[DONE]') events.push(joined)
  }
  return events
}

/** Text that reads as server-sent events (a field or comment line first), not a plain string. */
export function looksLikeSse(text: string): boolean {
  return /^(?::|data:|event:|id:|retry:)/.test(text)
}

/**
 * The single JSON response a non-streaming OpenAI call answers with, from a finished job's
 * output. worker-vllm's `return_aggregate_stream` wraps its one object in a list, so a list of
 * one is unwrapped; text is read as SSE (one `data:` event) or as JSON; anything else (several
 * items, several events, no output, a bare number) is `unexpected-output`.
 */
export function aggregatedResponse(output: unknown): OpenAIAnswer {
  const unexpected = (what: string) =>
    failure(
      'unexpected-output',
      `the worker's output is ${what}, not one OpenAI response object; a non-streaming call needs one (send "stream": true to receive a stream)`,
      'server_error',
      'unexpected_worker_output',
    )
  let value = output
  if (Array.isArray(value)) {
    if (value.length === 0) return unexpected('an empty list')
    if (value.length === 1) value = value[0]
    else if (value.every((item) => typeof item === 'string')) value = value.join('')
    else return unexpected(`a list of ${value.length} items`)
  }
  if (typeof value === 'string') {
    let parsed: unknown
    if (looksLikeSse(value)) {
      const events = sseEventData(value)
      if (events.length !== 1) return unexpected(`a stream of ${events.length} events`)
      value = events[0]
    }
    try {
      parsed = JSON.parse(value as string)
    } catch {
      return unexpected('text that is not JSON')
    }
    if (!isObject(parsed)) return unexpected('JSON that is not an object')
    value = parsed
  }
  if (value === undefined || value === null) return unexpected('empty')
  if (!isObject(value))
    return unexpected(`a ${Array.isArray(value) ? 'nested list' : typeof value}`)
  if (isErrorPayload(value))
    return { ok: false, failure: { reason: 'worker-error', error: workerError(value) } }
  return { ok: true, body: value }
}

/** Why a job that ended without a usable answer failed, as OpenAI's error object. */
export function jobFailure(
  job: Pick<JobView, 'id' | 'status' | 'error' | 'output'>,
  options: { waitedMs?: number } = {},
): OpenAIFailure | undefined {
  switch (job.status) {
    case 'FAILED':
      return {
        reason: 'worker-error',
        error: withCode(workerError(job.error ?? job.output), 'job_failed'),
      }
    case 'TIMED_OUT':
      return failure(
        'timed-out',
        `job ${job.id} timed out: it ran longer than its execution timeout`,
        'timeout',
        'job_timed_out',
      ).failure
    case 'CANCELLED':
      return failure('cancelled', `job ${job.id} was cancelled`, 'cancelled', 'job_cancelled')
        .failure
    case 'IN_QUEUE':
    case 'IN_PROGRESS': {
      const waited =
        options.waitedMs === undefined ? '' : ` after ${Math.round(options.waitedMs / 1000)} s`
      return failure(
        'pending',
        `job ${job.id} is still ${job.status}${waited}; it keeps running: poll /status/${job.id} for its result`,
        'timeout',
        'job_still_running',
      ).failure
    }
    case 'COMPLETED':
      return undefined
  }
}

const withCode = (error: OpenAIError, code: string): OpenAIError =>
  error.code === null ? { ...error, code } : error

/** The answer to a non-streaming call from the job as it is: the response, or why there is none. */
export function openaiAnswer(
  job: Pick<JobView, 'id' | 'status' | 'error' | 'output'>,
  options: { waitedMs?: number } = {},
): OpenAIAnswer {
  const failed = jobFailure(job, options)
  if (failed) return { ok: false, failure: failed }
  return aggregatedResponse(job.output)
}

/** The event OpenAI's clients read as an error in a stream (openai-node throws an APIError). */
export function sseErrorEvent(error: OpenAIError): string {
  return `data: ${JSON.stringify({ error })}\n\n`
}

export const SSE_DONE = 'data: [DONE]\n\n'
/** A comment line: keeps idle connections (and proxies) open; clients ignore it. */
export const SSE_KEEP_ALIVE = ': keep-alive\n\n'

/**
 * Frames a worker's stream chunks as one server-sent events response: text chunks (worker-vllm
 * yields raw `data: {...}\n\n`) pass through unchanged except that their `[DONE]` events are
 * held back; any other JSON value becomes one `data:` event (a list, one event per item); an
 * error becomes OpenAI's error event. `end` then sends the error of a failed job unless one was
 * already relayed, and `[DONE]` exactly once, last.
 */
export class OpenAISseFramer {
  private midEvent = false
  private errorSent = false
  private framed = 0

  /** How many chunks were framed so far. */
  get count(): number {
    return this.framed
  }

  frame(chunk: unknown): string {
    this.framed += 1
    if (Array.isArray(chunk)) return chunk.map((item) => this.frameOne(item)).join('')
    return this.frameOne(chunk)
  }

  /** A comment to keep the connection open; nothing while a worker's event is unfinished. */
  keepAlive(): string {
    return this.midEvent ? '' : SSE_KEEP_ALIVE
  }

  /** The end of the stream: the failure's error event (unless an error was relayed), `[DONE]`. */
  end(failed?: OpenAIError): string {
    let text = this.close()
    if (failed && !this.errorSent) {
      text += sseErrorEvent(failed)
      this.errorSent = true
    }
    return text + SSE_DONE
  }

  private frameOne(chunk: unknown): string {
    if (typeof chunk === 'string' && (this.midEvent || looksLikeSse(chunk))) {
      const text = withoutDone(chunk)
      if (text === '') return ''
      if (sseEventData(text).some(dataIsError)) this.errorSent = true
      this.midEvent = !/\r?\n\r?\n$/.test(text)
      return text
    }
    if (chunk === undefined) return ''
    if (isErrorPayload(chunk)) {
      this.errorSent = true
      return this.close() + sseErrorEvent(workerError(chunk))
    }
    return `${this.close()}data: ${JSON.stringify(chunk)}\n\n`
  }

  /** Ends a worker's unfinished event so that ours start on their own. */
  private close(): string {
    if (!this.midEvent) return ''
    this.midEvent = false
    return '\n\n'
  }
}

function dataIsError(data: string): boolean {
  try {
    return isErrorPayload(JSON.parse(data))
  } catch {
    return false
  }
}

/** The text without its `data: [DONE]` events (the framer sends the one `[DONE]` itself). */
function withoutDone(text: string): string {
  return text
    .replace(/(^|\n)data: ?\[DONE\][ \t]*\r?\n\r?\n/g, '$1')
    .replace(/(^|\n)data: ?\[DONE\][ \t]*(\r?\n)?$/, '$1')
}
