/**
 * What the OpenAPI document says of each operation and answer, so that a generated client's
 * comments tell something: every answer is described (never @fastify/swagger's "Default
 * Response"), errors are reusable responses under `components.responses`, path parameters and
 * the query parameters operations share reusable ones under `components.parameters`, and every
 * operation has a description.
 */
import { pascalCase } from './schema-names.js'

type JsonObject = Record<string, unknown>

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The errors' names and what they mean for any route that answers them. */
const ERRORS: Record<string, { name: string; description: string }> = {
  '400': {
    name: 'BadRequest',
    description:
      'The request does not parse or breaks its schema; `errors` names each field (`body.name: ...`).',
  },
  '401': {
    name: 'Unauthorized',
    description: 'No API key, or a key the server does not know.',
  },
  '402': {
    name: 'PaymentRequired',
    description: "The account's balance or spend limit does not cover it (docs/billing.md).",
  },
  '403': {
    name: 'Forbidden',
    description:
      'The key may not do this: a read-only key that writes, or an account calling an admin route.',
  },
  '404': {
    name: 'NotFound',
    description:
      "No such resource in the caller's account (another account's resources are not found either).",
  },
  '409': {
    name: 'Conflict',
    description: "The resource's state or another resource forbids it now (e.g. in use).",
  },
  '410': { name: 'Gone', description: 'The resource existed but is no longer available.' },
  '413': { name: 'PayloadTooLarge', description: 'The body is larger than the server takes.' },
  '422': {
    name: 'UnprocessableEntity',
    description:
      'The request parses but cannot be done as asked (an unknown GPU type, a quota reached).',
  },
  '429': {
    name: 'TooManyRequests',
    description: 'Too many requests from this key; `Retry-After` says when to try again.',
  },
  '500': { name: 'InternalServerError', description: 'The server failed to answer.' },
  '501': { name: 'NotImplemented', description: 'podyard does not offer this RunPod route.' },
  '502': { name: 'BadGateway', description: 'The worker or upstream failed to answer.' },
  '503': { name: 'ServiceUnavailable', description: 'The server cannot take it now.' },
  '504': { name: 'GatewayTimeout', description: 'The worker did not answer in time.' },
  default: { name: 'UnexpectedError', description: 'Any other error.' },
}

interface Operation extends JsonObject {
  operationId?: string
  summary?: string
  description?: string
  tags?: string[]
  security?: unknown[]
  parameters?: unknown[]
  responses?: Record<string, JsonObject>
}

const refName = (schema: unknown): string | undefined =>
  isObject(schema) && typeof schema.$ref === 'string' ? schema.$ref.split('/').pop() : undefined

const sentence = (text: string): string => (/[.!?]$/.test(text) ? text : `${text}.`)

/** What a success answer is, from its status, its body's name and the operation's summary. */
function successDescription(code: string, response: JsonObject, operation: Operation): string {
  const media = isObject(response.content) ? Object.values(response.content)[0] : undefined
  const name = refName(isObject(media) ? media.schema : undefined)
  const summary = operation.summary ?? ''
  if (code === '201') return name ? `Created: the new ${name}.` : 'Created.'
  if (code === '202') return name ? `Accepted: the ${name}.` : 'Accepted.'
  if (code === '204') return 'Done; no content.'
  if (code.startsWith('3')) return 'Redirect to the resource (`Location`).'
  return sentence(summary || (name ? `The ${name}` : 'OK'))
}

/** Who may call the operation, in words, from its security and tags. */
function callerSentence(operation: Operation): string {
  const security = operation.security
  if (Array.isArray(security) && security.length === 0) return 'No key is needed.'
  const schemes = JSON.stringify(security ?? [])
  if (schemes.includes('workerKey')) return "Called with the endpoint's worker key."
  if (operation.tags?.includes('Admin')) return 'Takes the admin key.'
  if (operation.tags?.includes('Job API') || operation.tags?.includes('Public models')) {
    return 'Takes an API key, as `Authorization: Bearer <key>` or the raw key.'
  }
  return 'Takes an API key of the account (`Authorization: Bearer <key>`).'
}

/**
 * The operation's description: its own when the route gives one, else its summary with who may
 * call it and the errors it may answer.
 */
function describeOperation(operation: Operation): void {
  if (typeof operation.description === 'string' && /\S/.test(operation.description)) return
  const errors = Object.keys(operation.responses ?? {}).filter((code) => !/^[23]/.test(code))
  const parts = [
    sentence(operation.summary ?? operation.operationId ?? 'An operation'),
    callerSentence(operation),
  ]
  if (errors.length > 0) {
    parts.push(`Errors it may answer: ${errors.join(', ')}.`)
  }
  operation.description = parts.join(' ')
}

/**
 * Errors as references to `components.responses`: one per status and body (`NotFound`), so a
 * generator makes one error type and one description serves every route.
 */
function reuseErrorResponses(operation: Operation, responses: JsonObject): void {
  for (const [code, response] of Object.entries(operation.responses ?? {})) {
    if (/^[23]/.test(code) || typeof response.$ref === 'string') continue
    const known = ERRORS[code] ?? { name: `Status${code}`, description: `Error ${code}.` }
    const content = response.content
    const media = isObject(content) ? Object.values(content)[0] : undefined
    const bodyName = refName(isObject(media) ? media.schema : undefined)
    const described = { ...response, description: known.description }
    // The problem+json answers take the plain name; other bodies (OpenAI's errors) add theirs.
    const base =
      bodyName === 'Problem' || bodyName === undefined ? known.name : bodyName + known.name
    let name = base
    const text = JSON.stringify(described)
    for (let n = 2; responses[name] !== undefined; n += 1) {
      if (JSON.stringify(responses[name]) === text) break
      name = `${base}${n}`
    }
    responses[name] = described
    operation.responses![code] = { $ref: `#/components/responses/${name}` }
  }
}

/**
 * Path parameters as references to `components.parameters`, one per name and schema: `IdPath`,
 * and where the same name means another thing (another description or schema), the operation's
 * tag added (`WorkerIdPathWorkerProtocol`).
 */
function reusePathParameters(operation: Operation, parameters: JsonObject): void {
  if (!Array.isArray(operation.parameters)) return
  const tag = pascalCase(operation.tags?.[0] ?? '')
  operation.parameters = operation.parameters.map((parameter) => {
    if (!isObject(parameter) || parameter.in !== 'path') return parameter
    const base = `${pascalCase(String(parameter.name))}Path`
    const text = JSON.stringify(parameter)
    const candidates = [base, `${base}${tag}`]
    for (let n = 2; n < 100; n += 1) candidates.push(`${base}${tag}${n}`)
    const name = candidates.find(
      (candidate) =>
        parameters[candidate] === undefined || JSON.stringify(parameters[candidate]) === text,
    )!
    parameters[name] = parameter
    return { $ref: `#/components/parameters/${name}` }
  })
}

/**
 * Query parameters that several operations take alike (`wait`, `startTime`, ...) as references
 * to `components.parameters`: `WaitQuery`, and where the same name means another thing, the
 * operation's tag added (and the resource its path names, for a third meaning). A parameter of
 * one operation only stays in place.
 */
function reuseSharedQueryParameters(
  operations: Array<{ path: string; operation: Operation }>,
  parameters: JsonObject,
): void {
  const uses = new Map<string, number>()
  const queryParameters = (operation: Operation) =>
    (operation.parameters ?? []).filter(
      (parameter): parameter is JsonObject => isObject(parameter) && parameter.in === 'query',
    )
  for (const { operation } of operations) {
    for (const parameter of queryParameters(operation)) {
      const text = JSON.stringify(parameter)
      uses.set(text, (uses.get(text) ?? 0) + 1)
    }
  }
  for (const { path, operation } of operations) {
    if (!Array.isArray(operation.parameters)) continue
    const tag = pascalCase(operation.tags?.[0] ?? '')
    // The resource the path names last (`datacenters` of /v2/catalog/datacenters/{id}).
    const resource = pascalCase(
      path
        .split('/')
        .filter((segment) => segment !== '' && !segment.startsWith('{'))
        .at(-1) ?? '',
    )
    operation.parameters = operation.parameters.map((parameter) => {
      if (!isObject(parameter) || parameter.in !== 'query') return parameter
      const text = JSON.stringify(parameter)
      if ((uses.get(text) ?? 0) < 2) return parameter
      const base = `${pascalCase(String(parameter.name))}Query`
      // Never a number added where names clash: the tag, then the resource, tell them apart.
      const name = [base, `${base}${tag}`, `${base}${tag}${resource}`].find(
        (candidate) =>
          parameters[candidate] === undefined || JSON.stringify(parameters[candidate]) === text,
      )
      if (name === undefined) return parameter
      parameters[name] = parameter
      return { $ref: `#/components/parameters/${name}` }
    })
  }
}

/** Describes every operation and answer of the document and moves the shared ones to components. */
export function describeOperations(document: {
  paths: Record<string, Record<string, Operation>>
  components?: JsonObject
}): void {
  const responses: JsonObject = {}
  const parameters: JsonObject = {}
  const operations: Array<{ path: string; operation: Operation }> = []
  for (const [path, item] of Object.entries(document.paths)) {
    for (const operation of Object.values(item)) {
      if (!isObject(operation)) continue
      operations.push({ path, operation })
      for (const [code, response] of Object.entries(operation.responses ?? {})) {
        if (
          /^[23]/.test(code) &&
          (!response.description || response.description === 'Default Response')
        ) {
          response.description = successDescription(code, response, operation)
        }
      }
      describeOperation(operation)
      reuseErrorResponses(operation, responses)
      reusePathParameters(operation, parameters)
    }
  }
  reuseSharedQueryParameters(operations, parameters)
  const sorted = (record: JsonObject) =>
    Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)))
  document.components = {
    ...document.components,
    responses: sorted(responses),
    parameters: sorted(parameters),
  }
}
