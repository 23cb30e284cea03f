/**
 * What a finished job posts to job-done, following runpod-python's `run_job` and
 * `handle_job` (wire-compat §5.5, §5.6), so handlers ported from Python behave the same.
 */
export interface DoneBody {
  output?: unknown
  error?: unknown
  stopPod?: true
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

/**
 * The body for a handler's return value. A plain object's `error` (when truthy) fails the job
 * and its `refresh_worker` (when truthy) asks for the worker to be recycled; both keys are
 * taken out of the output, and an output left empty (`{}`) is not sent.
 */
export function resultBody(output: unknown): DoneBody {
  if (!isPlainObject(output)) return { output: output === undefined ? null : output }
  const { error, refresh_worker: refreshWorker, ...rest } = output
  const body: DoneBody = {}
  if (Object.keys(rest).length > 0) body.output = rest
  if (error) body.error = error
  if (refreshWorker) body.stopPod = true
  return body
}

export interface ErrorContext {
  workerId: string
  version: string
  hostname?: string | undefined
}

/**
 * runpod-python reports a handler exception as a JSON-encoded string of
 * `{error_type, error_message, error_traceback, hostname, worker_id, runpod_version}`.
 */
export function exceptionError(thrown: unknown, context: ErrorContext): string {
  const error = thrown instanceof Error ? thrown : undefined
  return JSON.stringify({
    error_type: error ? error.name : typeof thrown,
    error_message: error ? error.message : String(thrown),
    error_traceback: error?.stack ?? '',
    hostname: context.hostname ?? 'unknown',
    worker_id: context.workerId,
    runpod_version: context.version,
  })
}

/** A streaming handler's exception: runpod-python's `handler: <message> \ntraceback: <trace>`. */
export function streamExceptionError(thrown: unknown): string {
  const error = thrown instanceof Error ? thrown : undefined
  return `handler: ${error ? error.message : String(thrown)} \ntraceback: ${error?.stack ?? ''}`
}

/**
 * A yielded plain object with a truthy `error` ends the stream and fails the job, as in
 * runpod-python (worker-vllm yields its errors so); the chunk itself is not streamed.
 */
export function chunkError(chunk: unknown): string | undefined {
  if (!isPlainObject(chunk) || !chunk.error) return undefined
  return typeof chunk.error === 'string' ? chunk.error : JSON.stringify(chunk.error)
}

/** True for what a generator handler returns: an async iterable or a (sync) generator object. */
export function isStreamResult(
  value: unknown,
): value is AsyncIterable<unknown> | Iterable<unknown> {
  if (typeof value !== 'object' || value === null) return false
  if (Symbol.asyncIterator in value) return true
  return Object.prototype.toString.call(value) === '[object Generator]'
}
