import { AppError } from '../../shared/app-error.js'
import { resolvePolicy, type Job, type S3Config } from './job.js'

// What the job API and the worker protocol read from a request body, checked before anything is
// stored: each problem is named in one 400 (problem+json `errors`).

/** A 400 naming each problem of a request body. */
export const badRequest = (problems: string[]) =>
  new AppError('MALFORMED_REQUEST', `the request is not valid: ${problems.join('; ')}`, {
    errors: problems,
  })

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const S3_FIELDS = ['accessId', 'accessSecret', 'bucketName', 'endpointUrl'] as const

/** The submission body of `/run` and `/runsync` (spec "Serverless job"), or 400 naming each problem. */
export function parseSubmission(
  body: unknown,
  defaultExecutionTimeout: number,
): Pick<Job, 'input' | 'policy' | 'webhook' | 's3Config'> {
  if (!isObject(body)) throw badRequest(['body: must be a JSON object with an input object'])
  const problems: string[] = []
  if (body.input === undefined) problems.push('body.input: required')
  else if (!isObject(body.input)) problems.push('body.input: must be a JSON object')
  if (body.webhook !== undefined && typeof body.webhook !== 'string') {
    problems.push('body.webhook: must be a string URL')
  } else if (typeof body.webhook === 'string' && !URL.canParse(body.webhook)) {
    problems.push('body.webhook: must be an absolute URL')
  }
  let s3Config: S3Config | undefined
  if (body.s3Config !== undefined) {
    if (!isObject(body.s3Config)) problems.push('body.s3Config: must be an object')
    else {
      const raw = body.s3Config
      for (const field of S3_FIELDS) {
        if (typeof raw[field] !== 'string')
          problems.push(`body.s3Config.${field}: must be a string`)
      }
      if (raw.objectPath !== undefined && typeof raw.objectPath !== 'string') {
        problems.push('body.s3Config.objectPath: must be a string')
      }
      s3Config = raw as unknown as S3Config
    }
  }
  const policy = resolvePolicy(body.policy, { defaultExecutionTimeout })
  problems.push(...policy.problems)
  if (problems.length > 0 || policy.policy === undefined) throw badRequest(problems)
  return {
    input: body.input,
    policy: policy.policy,
    ...(typeof body.webhook === 'string' ? { webhook: body.webhook } : {}),
    ...(s3Config ? { s3Config } : {}),
  }
}

/** What a worker's job-done post means (wire-compat §5.5). */
export type DoneReport =
  | { kind: 'progress'; output: unknown }
  | { kind: 'finished'; output?: unknown; error?: string; stopPod: boolean }

export function parseDoneReport(body: unknown): DoneReport {
  if (!isObject(body)) throw badRequest(['body: must be a JSON object'])
  if (body.status === 'IN_PROGRESS') return { kind: 'progress', output: body.output }
  const report: DoneReport = { kind: 'finished', stopPod: body.stopPod === true }
  if (body.output !== undefined) report.output = body.output
  // runpod-python sends exception details as a JSON-encoded string; anything else is kept as JSON.
  if (body.error !== undefined && body.error !== null) {
    report.error = typeof body.error === 'string' ? body.error : JSON.stringify(body.error)
  }
  return report
}
