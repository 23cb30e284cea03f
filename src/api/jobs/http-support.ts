import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  RouteShorthandOptions,
} from 'fastify'
import { AppError } from '../../shared/app-error.js'
import { refuseDeepJson } from '../http/json-nesting.js'

/**
 * First segments under /v2 that belong to the management API (wire-compat §1, "v2 name
 * collision"). Fastify's router prefers their static routes, but a method or deeper path they
 * lack falls back to `/v2/:endpointId/...`: these are refused there so that, say,
 * `POST /v2/pods/run` is "no route", never a job of an endpoint named `pods`. Endpoint ids are
 * 14 lowercase letters and digits, so none of these can be one.
 */
export const RESERVED_FIRST_SEGMENTS: ReadonlySet<string> = new Set([
  'account',
  'admin',
  'billing',
  'catalog',
  'clusters',
  'docs',
  'network-volumes',
  'objects',
  'openapi.json',
  'pods',
  'registries',
  'serverless',
  'templates',
])

/** An onRequest hook: 404 "no route" for a reserved first segment taken as an endpoint id. */
export async function refuseReservedSegments(request: FastifyRequest): Promise<void> {
  const { endpointId } = request.params as { endpointId?: string }
  if (endpointId !== undefined && RESERVED_FIRST_SEGMENTS.has(endpointId)) {
    throw new AppError(
      'ROUTE_NOT_FOUND',
      `no route for ${request.method} ${request.url.split('?')[0]}`,
    )
  }
}

/**
 * Bodies are read as text whatever their content type and parsed as JSON by the route:
 * runpod-python's worker posts JSON labelled application/x-www-form-urlencoded, and clients post
 * `{}` or nothing to cancel and purge-queue.
 */
export function acceptAnyBodyAsText(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    done(null, body)
  })
}

/**
 * The body parsed as JSON; `undefined` when empty; 400 when not JSON or nested deeper than
 * MAX_JSON_DEPTH (docs/api.md, "Nesting"), which is checked before it is parsed.
 */
export function jsonBody(request: FastifyRequest): unknown {
  const raw = request.body
  if (raw === undefined || raw === null) return undefined
  if (typeof raw !== 'string') return raw
  if (raw.trim() === '') return undefined
  refuseDeepJson(raw)
  try {
    return JSON.parse(raw) as unknown
  } catch (error) {
    throw new AppError(
      'MALFORMED_REQUEST',
      `the body is not valid JSON: ${(error as Error).message}`,
    )
  }
}

/** An integer query parameter in [min, max], its default when absent, else 400. */
export function intQuery(
  request: FastifyRequest,
  name: string,
  bounds: { min: number; max: number; default: number },
): number {
  const raw = (request.query as Record<string, unknown> | undefined)?.[name]
  if (raw === undefined || raw === '') return bounds.default
  const value = typeof raw === 'string' && /^-?\d+$/.test(raw) ? Number(raw) : Number.NaN
  if (!Number.isSafeInteger(value) || value < bounds.min || value > bounds.max) {
    const problem = `querystring.${name}: must be an integer between ${bounds.min} and ${bounds.max}`
    throw new AppError('MALFORMED_REQUEST', problem, { errors: [problem] })
  }
  return value
}

export function stringQuery(request: FastifyRequest, name: string): string | undefined {
  const raw = (request.query as Record<string, unknown> | undefined)?.[name]
  if (Array.isArray(raw)) return raw.map(String).join(',')
  return typeof raw === 'string' ? raw : undefined
}

/**
 * Route options of the per-job routes (/run, /runsync, /status, and the worker protocol's take,
 * done, stream, stop and ping): their two request log lines (`incoming request`, `request
 * completed`) are written only when the server logs at `debug` or below. At thousands of jobs a
 * second those lines cost 5 to 20 % of the server's CPU (bench/README.md); errors (5xx) are still
 * logged at `error`, warnings at `warn`. Every other route keeps its request log at `info`
 * (docs/job-api.md).
 *
 * Rather than a route `logLevel` (which gives every request its own pino child logger, with its
 * log methods rebuilt for the level: about 25 µs a request here), the request's logger is a
 * `QuietRequestLogger` that makes the child only when something is logged at warn or above.
 */
export function perJobRouteLogging(
  app: FastifyInstance,
): Pick<RouteShorthandOptions, 'childLoggerFactory'> {
  if (app.log.level === 'debug' || app.log.level === 'trace') return {}
  return {
    childLoggerFactory: (logger, bindings) =>
      new QuietRequestLogger(logger, bindings) as unknown as FastifyBaseLogger,
  }
}

type Bindings = Parameters<FastifyBaseLogger['child']>[0]
type ChildLoggerOptions = Parameters<FastifyBaseLogger['child']>[1]

/**
 * A request's logger that drops info, debug and trace, and makes its pino child only on use.
 * Methods on the prototype, so a request allocates one small object.
 */
export class QuietRequestLogger {
  private real: FastifyBaseLogger | undefined

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.real ??= this.parent.child(this.bindings))
  }

  get level(): string {
    return this.parent.level
  }

  set level(level: string) {
    this.logger.level = level
  }

  fatal(...args: unknown[]): void {
    ;(this.logger.fatal as (...a: unknown[]) => void)(...args)
  }

  error(...args: unknown[]): void {
    ;(this.logger.error as (...a: unknown[]) => void)(...args)
  }

  warn(...args: unknown[]): void {
    ;(this.logger.warn as (...a: unknown[]) => void)(...args)
  }

  info(..._args: unknown[]): void {}
  debug(..._args: unknown[]): void {}
  trace(..._args: unknown[]): void {}
  silent(..._args: unknown[]): void {}

  /**
   * As quiet as this one (the trace context hook makes a child of every request's logger to add
   * the trace ids): a real pino child would log the per-job routes' request lines at info again.
   */
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    if (options !== undefined) return this.logger.child(bindings, options)
    return new QuietRequestLogger(this.parent, {
      ...this.bindings,
      ...bindings,
    }) as unknown as FastifyBaseLogger
  }
}
