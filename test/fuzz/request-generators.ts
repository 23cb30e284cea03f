import fc from 'fast-check'
import type { DocumentOperation as Operation } from '../support/openapi-operations.js'
import { TEST_ADMIN_KEY } from '../support/platform.js'
import { LONG_POLLS, type FuzzRequest } from './fuzz-requests.js'
import { graphqlDocument } from './graphql-documents.js'
import {
  contentType,
  hostileBodyText,
  hostileSegment,
  hostileValue,
  hugeString,
  oddString,
  withDeepValues,
} from './hostile-values.js'
import { fuzzed, validish, type JsonSchema } from './schema-arbitrary.js'

/** The keys of the hostile-input fuzz suite: two accounts' and two endpoints' worker keys. */
export interface FuzzKeys {
  a: string
  b: string
  workerA: string
  workerOther: string
}

/**
 * The request generators of the hostile-input fuzz suite (hostile-input.test.ts): for each
 * operation of the OpenAPI document, for the worker protocol and for GraphQL. `ids` (the ids the
 * server holds, by what they are) and `keys` are read as each generator is made, so the suite
 * may fill them in its beforeAll and add jobs as it goes.
 */
export function requestGenerators(ids: Record<string, string[]>, keys: FuzzKeys) {
  /** The ids a path parameter may take, by its name and the path it is in. */
  function idsFor(name: string, path: string): string[] {
    if (name === 'endpointId') return ids.endpoint!
    if (name === 'jobId') return ids.job!
    if (name === 'workerId') return ids.worker!
    if (name === 'accountId') return ids.account!
    if (name === '*') return ['chat/completions', 'completions', 'models', 'a/b/c']
    const byPrefix: Array<[RegExp, string]> = [
      [/^\/v2\/pods/, 'pod'],
      [/^\/v2\/templates/, 'template'],
      [/^\/v2\/network-volumes/, 'volume'],
      [/^\/v2\/registries/, 'registry'],
      [/^\/v2\/serverless/, 'endpoint'],
      [/^\/v2\/catalog\/gpus/, 'gpu'],
      [/^\/v2\/catalog\/cpus/, 'cpu'],
      [/^\/v2\/catalog\/datacenters/, 'dataCenter'],
      [/^\/v2\/account\/api-keys/, 'apiKey'],
    ]
    const kind = byPrefix.find(([pattern]) => pattern.test(path))?.[1]
    return kind ? ids[kind]! : []
  }

  /** Known ids for body properties whose name says what they hold. */
  const knownForProperty = (name: string): string[] =>
    ({
      templateId: ids.template!,
      volumeId: ids.volume!,
      networkVolumeId: ids.volume!,
      registry: ids.registry!,
      dataCenterId: ids.dataCenter!,
      id: [...ids.gpu!, ...ids.cpu!],
      podId: ids.pod!,
      endpointId: ids.endpoint!,
      serverlessId: ids.endpoint!,
      name: ['fuzz', 'web-1'],
      image: ['img:1', 'ubuntu:24.04'],
      ports: ['8080/http', '22/tcp'],
      path: ['/workspace', '/data'],
      'env{}': ['GREETING', 'HF_TOKEN', 'PORT'],
      pools: ['ADA_24', 'AMPERE_16'],
      action: ['start', 'stop', 'restart', 'terminate', 'reset'],
    })[name] ?? []

  const authHeader: () => fc.Arbitrary<Record<string, string>> = () =>
    fc.oneof(
      { weight: 16, arbitrary: fc.constant({ authorization: `Bearer ${keys.a}` }) },
      { weight: 3, arbitrary: fc.constant({ authorization: `Bearer ${keys.b}` }) },
      { weight: 1, arbitrary: fc.constant({ authorization: `Bearer ${TEST_ADMIN_KEY}` }) },
      { weight: 1, arbitrary: fc.constant({ authorization: keys.a }) },
      { weight: 1, arbitrary: fc.constant({ authorization: `Bearer ${keys.workerA}` }) },
      { weight: 2, arbitrary: fc.constant({}) },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom(
            'Bearer',
            'Bearer ',
            'Basic YTpi',
            'Bearer a b',
            `Bearer ${'k'.repeat(5000)}`,
            'Bearer pyd_\u00e9',
          )
          .map((authorization) => ({ authorization })),
      },
    )

  const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
    { weight: 6, arbitrary: fc.constant({}) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Record<string, string>>(
        { accept: 'application/xml' },
        { accept: '*/*;q=0.1, text/html' },
        { 'accept-encoding': 'gzip, br, deflate' },
        { 'content-encoding': 'gzip' },
        { 'x-forwarded-for': '1.2.3.4, ::1' },
        { 'x-request-id': 'a'.repeat(2000) },
        { 'accept-version': '9.9.9' },
        { 'transfer-encoding': 'chunked' },
        { 'if-none-match': '*' },
        { range: 'bytes=0-1' },
        { charset: 'utf-16' },
      ),
    },
  )

  /** A query value: valid-ish per its schema, odd, or raw bad percent-encoding. */
  const queryValue = (schema: JsonSchema): fc.Arbitrary<string> =>
    fc.oneof(
      {
        weight: 5,
        arbitrary: validish(schema).map((v) =>
          encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v)),
        ),
      },
      {
        weight: 2,
        arbitrary: oddString.map((s) => encodeURIComponent(s.replace(/[\uD800-\uDFFF]/g, '?'))),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          '%',
          '%zz',
          '%E0%A4%A',
          'a&b',
          'a=b',
          '%00',
          '+',
          '[]',
          'a,b,,c',
        ),
      },
    )

  /** `wait` for long polls: short and valid, or invalid. */
  const waitParam = fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 1200 }).map(String) },
    { weight: 1, arbitrary: fc.constantFrom('-1', 'abc', '1e3', '99999999999', '', '1.5') },
  )

  function requestsOf(operation: Operation): fc.Arbitrary<FuzzRequest> {
    const longPoll = LONG_POLLS.test(operation.path)
    const pathParams = operation.parameters.filter((p) => p.in === 'path')
    const queryParams = operation.parameters.filter((p) => p.in === 'query')
    const segment = (name: string) => {
      const known = idsFor(name, operation.path)
      return fc.oneof(
        {
          weight: 6,
          arbitrary:
            known.length > 0
              ? fc
                  .constantFrom(...known)
                  .map((id) => ({ raw: encodeURIComponent(id).replaceAll('%2F', '/') }))
              : hostileSegment,
        },
        { weight: 2, arbitrary: hostileSegment },
      )
    }
    const path = fc.tuple(...pathParams.map((p) => segment(p.name))).map((values) => {
      let result = operation.path
      pathParams.forEach((p, i) => {
        result = result.replace(`{${p.name}}`, values[i]!.raw)
      })
      return result
    })
    const query = fc
      .tuple(
        ...queryParams.map((p) =>
          fc.option(
            queryValue(p.schema).map((v) => `${encodeURIComponent(p.name)}=${v}`),
            { nil: undefined, freq: 2 },
          ),
        ),
        fc.option(
          fc
            .tuple(oddString, oddString)
            .map(
              ([k, v]) =>
                `${encodeURIComponent(k.replace(/[\uD800-\uDFFF]/g, '?'))}=${encodeURIComponent(v.replace(/[\uD800-\uDFFF]/g, '?'))}`,
            ),
          { nil: undefined, freq: 4 },
        ),
        longPoll ? waitParam.map((w) => `wait=${w}`) : fc.constant(undefined),
        /\/logs$/.test(operation.path)
          ? fc.constantFrom('follow=false', 'follow=true', 'follow=maybe')
          : fc.constant(undefined),
      )
      .map((parts) => {
        const present = parts.filter((p): p is string => p !== undefined)
        return present.length === 0 ? '' : `?${present.join('&')}`
      })
    const hasBody = !['GET', 'HEAD', 'DELETE'].includes(operation.method)
    const bodySchema: JsonSchema | undefined =
      operation.body ??
      ((hasBody && operation.path.includes('{endpointId}')) ||
      /\/(run|runsync)$/.test(operation.path)
        ? {
            type: 'object',
            properties: {
              input: { type: 'object', additionalProperties: { type: 'string' } },
              policy: {
                type: 'object',
                properties: {
                  ttl: { type: 'integer' },
                  executionTimeout: { type: 'integer' },
                  lowPriority: { type: 'boolean' },
                },
              },
              webhook: { type: 'string', enum: ['http://127.0.0.1:9/hook', 'not a url', 'a:b'] },
            },
            required: ['input'],
          }
        : undefined)
    const body: fc.Arbitrary<string | undefined> = !hasBody
      ? fc.constant(undefined)
      : fc.oneof(
          {
            weight: 8,
            arbitrary: bodySchema
              ? fuzzed(bodySchema, knownForProperty).map((v) =>
                  withDeepValues(JSON.stringify(v) ?? 'null'),
                )
              : fc.constant('{}'),
          },
          { weight: 2, arbitrary: hostileBodyText },
          { weight: 1, arbitrary: fc.constant(undefined) },
        )
    return fc
      .tuple(path, query, body, authHeader(), extraHeaders, contentType)
      .map(([p, q, b, auth, extra, type]) => ({
        operation: `${operation.method} ${operation.path}`,
        method: operation.method,
        target: `${p}${q}`,
        headers: {
          ...auth,
          ...extra,
          ...(b !== undefined && type !== undefined ? { 'content-type': type } : {}),
        },
        ...(b !== undefined ? { body: b } : {}),
        longPoll,
      }))
  }

  /** The worker protocol (its own tag of the OpenAPI document), on the endpoint of the workers. */
  function workerRequests(route: string): fc.Arbitrary<FuzzRequest> {
    const endpointId = fc.oneof(
      { weight: 8, arbitrary: fc.constant(ids.endpoint![1]!) },
      { weight: 1, arbitrary: fc.constantFrom(...ids.endpoint!) },
      { weight: 1, arbitrary: hostileSegment.map((s) => s.raw) },
    )
    const worker = fc.oneof(
      fc.constantFrom(...ids.worker!),
      hostileSegment.map((s) => s.raw),
    )
    const job = fc.oneof(
      fc.constantFrom(...ids.job!),
      hostileSegment.map((s) => s.raw),
    )
    const auth = fc.oneof(
      { weight: 6, arbitrary: fc.constant({ authorization: keys.workerA }) },
      { weight: 3, arbitrary: fc.constant({ authorization: keys.a }) },
      { weight: 1, arbitrary: fc.constant({ authorization: keys.workerOther }) },
      { weight: 1, arbitrary: fc.constant({ authorization: `Bearer ${keys.b}` }) },
      { weight: 1, arbitrary: fc.constant({}) },
    )
    const doneBody = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .record(
            {
              output: hostileValue,
              error: fc.option(fc.oneof(oddString, hostileValue), { nil: undefined }),
              status: fc.option(fc.constantFrom('IN_PROGRESS', 'COMPLETED', 7), { nil: undefined }),
              stopPod: fc.option(fc.oneof(fc.boolean(), oddString), { nil: undefined }),
            },
            { requiredKeys: [] },
          )
          .map((v) => withDeepValues(JSON.stringify(v))),
      },
      { weight: 2, arbitrary: hostileBodyText },
      { weight: 1, arbitrary: hugeString.map((s) => JSON.stringify({ output: s })) },
    )
    const batchBody = fc.oneof(
      fc
        .array(
          fc
            .tuple(fc.constantFrom(...ids.job!, 'nope'), hostileValue)
            .map(([id, output]) => ({ id, output })),
          { maxLength: 120 },
        )
        .map((v) => withDeepValues(JSON.stringify(v))),
      hostileBodyText,
      fc
        .constantFrom(...ids.job!)
        .map((id) => `[{"id":"${id}","output":${'['.repeat(3000)}${']'.repeat(3000)}}]`),
    )
    const wait = waitParam.map((w) => `wait=${w}`)
    const shapes: Record<
      string,
      fc.Arbitrary<{ method: string; target: string; body?: string }>
    > = {
      'job-take': fc
        .tuple(endpointId, worker, wait, fc.constantFrom('0', '1', 'x'))
        .map(([e, w, q, p]) => ({
          method: 'GET',
          target: `/v2/${e}/job-take/${w}?${q}&job_in_progress=${p}`,
        })),
      'job-take-batch': fc
        .tuple(
          endpointId,
          worker,
          wait,
          fc.oneof(
            fc.integer({ min: -5, max: 500 }).map(String),
            fc.constantFrom('abc', '1e2', '99999999999999999999'),
          ),
        )
        .map(([e, w, q, n]) => ({
          method: 'GET',
          target: `/v2/${e}/job-take-batch/${w}?${q}&batch_size=${n}`,
        })),
      'job-done': fc.tuple(endpointId, worker, job, doneBody).map(([e, w, j, body]) => ({
        method: 'POST',
        target: `/v2/${e}/job-done/${w}/${j}?isStream=false`,
        body,
      })),
      'job-done-batch': fc
        .tuple(endpointId, worker, batchBody)
        .map(([e, w, body]) => ({ method: 'POST', target: `/v2/${e}/job-done-batch/${w}`, body })),
      'job-stream': fc.tuple(endpointId, worker, job, doneBody).map(([e, w, j, body]) => ({
        method: 'POST',
        target: `/v2/${e}/job-stream/${w}/${j}`,
        body,
      })),
      'job-stop': fc
        .tuple(endpointId, worker, wait)
        .map(([e, w, q]) => ({ method: 'GET', target: `/v2/${e}/job-stop/${w}?${q}` })),
      ping: fc
        .tuple(
          endpointId,
          worker,
          fc.array(fc.oneof(fc.constantFrom(...ids.job!), oddString), { maxLength: 5 }),
          fc.option(oddString, { nil: undefined }),
        )
        .map(([e, w, jobs, reason]) => ({
          method: 'GET',
          target: `/v2/${e}/ping/${w}?job_id=${jobs.map((j) => encodeURIComponent(j.replace(/[\uD800-\uDFFF]/g, '?'))).join(',')}${reason === undefined ? '' : `&status=unhealthy&check=c&reason=${encodeURIComponent(reason.replace(/[\uD800-\uDFFF]/g, '?'))}`}`,
        })),
    }
    return fc.tuple(shapes[route]!, auth, contentType).map(([shape, a, type]) => ({
      operation: `worker ${route}`,
      method: shape.method,
      target: shape.target,
      headers: {
        ...a,
        ...(shape.body !== undefined && type !== undefined ? { 'content-type': type } : {}),
      },
      ...(shape.body !== undefined ? { body: shape.body } : {}),
      longPoll: LONG_POLLS.test(shape.target),
    }))
  }

  const graphqlRequests = (): fc.Arbitrary<FuzzRequest> =>
    fc
      .tuple(
        graphqlDocument,
        fc.oneof(
          fc.constant(undefined),
          hostileValue,
          fc.constant({ input: { podId: ids.pod![0] } }),
        ),
        fc.option(oddString, { nil: undefined, freq: 4 }),
        fc.oneof(
          { weight: 3, arbitrary: fc.constant(`api_key=${keys.a}`) },
          { weight: 1, arbitrary: fc.constant(`api_key=${keys.b}`) },
          { weight: 2, arbitrary: fc.constant('') },
          {
            weight: 1,
            arbitrary: fc.constantFrom('api_key=', 'api_key=%zz', `api_key=${keys.workerA}`),
          },
        ),
        fc.boolean(),
        contentType,
      )
      .map(([query, variables, operationName, key, get, type]) => {
        if (get) {
          const params = [
            `query=${encodeURIComponent(query.replace(/[\uD800-\uDFFF]/g, '?'))}`,
            key,
          ]
          if (variables !== undefined)
            params.push(
              `variables=${encodeURIComponent(JSON.stringify(variables).replace(/[\uD800-\uDFFF]/g, '?'))}`,
            )
          return {
            operation: 'GET /graphql',
            method: 'GET',
            target: `/graphql?${params.filter(Boolean).join('&')}`,
            headers: {},
            longPoll: false,
          }
        }
        const headers: Record<string, string> = type === undefined ? {} : { 'content-type': type }
        return {
          operation: 'POST /graphql',
          method: 'POST',
          target: `/graphql${key ? `?${key}` : ''}`,
          headers,
          body: withDeepValues(
            JSON.stringify({
              query,
              ...(variables === undefined ? {} : { variables }),
              ...(operationName === undefined ? {} : { operationName }),
            }),
          ),
          longPoll: false,
        }
      })

  return { requestsOf, workerRequests, graphqlRequests }
}
