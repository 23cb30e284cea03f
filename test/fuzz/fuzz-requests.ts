import { Agent, request as httpRequest } from 'node:http'

/**
 * A request of the hostile-input fuzz suite (hostile-input.test.ts), how it is sent (as raw as
 * node:http allows) and how its answer is judged.
 */

/** Requests in flight at once. */
export const CONCURRENCY = 8
/** A long poll (runsync, status-sync, stream, logs, take, stop) is let go after this. */
const LONG_POLL_MS = 2_500
/** Any other request must be answered within this. */
const ANSWER_MS = 20_000

export interface FuzzRequest {
  /** Operation label for the report: `POST /v2/pods`. */
  operation: string
  method: string
  /** Path and query exactly as sent (already encoded, or deliberately not). */
  target: string
  headers: Record<string, string>
  body?: string
  longPoll: boolean
}

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

export interface Failure {
  operation: string
  request: string
  problem: string
}

export const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 })

/** Sends one request as raw as node:http allows (no URL normalization). */
export function send(base: string, request: FuzzRequest): Promise<Answer | 'timeout' | Error> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve) => {
    let settled = false
    const deadline: { timer?: NodeJS.Timeout } = {}
    const done = (value: Answer | 'timeout' | Error) => {
      if (settled) return
      settled = true
      clearTimeout(deadline.timer)
      resolve(value)
    }
    let req: ReturnType<typeof httpRequest>
    try {
      req = httpRequest(
        {
          host: hostname,
          port,
          method: request.method,
          path: request.target,
          headers: request.headers,
          agent,
        },
        (response) => {
          const chunks: Buffer[] = []
          let size = 0
          response.on('data', (chunk: Buffer) => {
            size += chunk.length
            if (size < 1024 * 1024) chunks.push(chunk)
          })
          response.on('end', () =>
            done({
              status: response.statusCode ?? 0,
              headers: response.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          )
          response.on('error', (error) => done(error))
        },
      )
    } catch (error) {
      // node:http refuses some generated headers or paths itself: nothing reached the server.
      done(new Error(`not sent: ${(error as Error).message}`))
      return
    }
    // A deadline, not an idle timeout: a stream that sends keep-alives is never idle.
    deadline.timer = setTimeout(
      () => {
        req.destroy()
        done('timeout')
      },
      request.longPoll ? LONG_POLL_MS : ANSWER_MS,
    )
    req.on('error', (error) => done(error))
    req.end(request.body)
  })
}

export const describeRequest = (r: FuzzRequest) =>
  `${r.method} ${r.target.slice(0, 160)} [${Object.entries(r.headers)
    .map(([k, v]) => `${k}: ${String(v).slice(0, 40)}`)
    .join('; ')}] ${r.body === undefined ? '' : `body(${r.body.length}): ${r.body.slice(0, 120)}`}`

/** What is wrong with an answer, or undefined. */
export function judge(
  request: FuzzRequest,
  answer: Answer | 'timeout' | Error,
): string | undefined {
  if (answer === 'timeout') return request.longPoll ? undefined : `no answer in ${ANSWER_MS} ms`
  if (answer instanceof Error) {
    return answer.message.startsWith('not sent:')
      ? undefined
      : `connection failed: ${answer.message}`
  }
  const openai = /\/openai\//.test(request.target)
  const graphql = request.target.startsWith('/graphql')
  const type = String(answer.headers['content-type'] ?? '')
  // What the router or the HTTP parser refused before any route: problem+json on every path.
  const beforeRouting =
    type.startsWith('application/problem+json') &&
    (answer.status === 414 || answer.status === 431 || /percent-encoding/.test(answer.body))
  // 501 problem+json is the documented answer of the routes of RunPod's contract this platform
  // does not offer (docs/api.md, "Not offered"): an answer, not a fault.
  const notOffered = answer.status === 501 && type.startsWith('application/problem+json')
  if (answer.status >= 500 && !(openai && answer.status === 504) && !notOffered) {
    return `${answer.status}: ${answer.body.slice(0, 300)}`
  }
  if (answer.status >= 400 && answer.status < 500) {
    if (beforeRouting) return undefined
    if (graphql) {
      if (!/"errors"/.test(answer.body))
        return `GraphQL ${answer.status} without errors[]: ${answer.body.slice(0, 200)}`
    } else if (openai) {
      if (!/"error"/.test(answer.body)) {
        return `OpenAI ${answer.status} without an error: ${answer.body.slice(0, 200)}`
      }
    } else if (!type.startsWith('application/problem+json')) {
      return `${answer.status} as ${type || 'no content type'}, not problem+json: ${answer.body.slice(0, 200)}`
    }
  }
  return undefined
}

/** The routes that hold a request open (let go after LONG_POLL_MS). */
export const LONG_POLLS =
  /\/(runsync|status-sync|stream|logs|job-take|job-take-batch|job-stop|openai)\b/
