import { getIntrospectionQuery } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  MAX_DOCUMENT_DIRECTIVES,
  MAX_DOCUMENT_NESTING,
  MAX_DOCUMENT_OPERATIONS,
  MAX_DOCUMENT_TOKENS,
  MAX_FRAGMENT_DEFINITIONS,
  MAX_FRAGMENT_SPREADS,
} from '../../src/api/graphql/document-budget.js'
import { MAX_KEYLESS_EXECUTION_COST } from '../../src/api/graphql/execution-budget.js'
import { MAX_QUERY_FIELDS } from '../../src/api/graphql/query-limits.js'
import { json } from '../support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'

/**
 * What one GraphQL request may cost (docs/graphql.md, "Limits"): a document's
 * budget of tokens, definitions, spreads, directives and nesting is checked before anything
 * else, introspection counts against the field limit, running is bounded by an execution budget
 * (a smaller one without a key), answers by a size cap, bodies by 1 MiB; each refusal is
 * `errors[]`, and none needs a key to be tested.
 */

interface GraphqlAnswer {
  status: number
  body: { data: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> }
  bytes: number
}

const rep = (n: number, f: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => f(i)).join(' ')
const aliases = (n: number, selection: string) => `{ ${rep(n, (i) => `a${i}: ${selection}`)} }`
/** `n` fragments, each spreading the next twice: 2^n paths to `leaf` in 15 * n bytes. */
const fanOut = (n: number, leaf = '__typename') =>
  `query { ...F0 } ${rep(n, (i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`)} fragment F${n} on Query { ${leaf} }`
/** A chain of `n` fragments, each spreading the next once. */
const chain = (n: number, leaf = '__typename') =>
  `query { ...F0 } ${rep(n, (i) => `fragment F${i} on Query { ...F${i + 1} }`)} fragment F${n} on Query { ${leaf} }`

describe('GraphQL limits', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform?.close())

  async function graphql(
    body: string,
    key: string | null = null,
    contentType = 'application/json',
  ): Promise<GraphqlAnswer> {
    const response = await fetch(`${platform.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': contentType,
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      },
      body,
    })
    const text = await response.text()
    return {
      status: response.status,
      body: JSON.parse(text) as GraphqlAnswer['body'],
      bytes: text.length,
    }
  }
  const query = (source: string, key: string | null = null) =>
    graphql(JSON.stringify({ query: source }), key)

  const refusal = (answer: GraphqlAnswer) => {
    expect(answer.body.data).toBeNull()
    expect(answer.body.errors).toHaveLength(1)
    return answer.body.errors![0]!
  }

  it('without a key, 1 000 aliases of introspection are refused by the field limit', async () => {
    const answer = await query(aliases(1000, '__schema { types { name } }'))
    expect(answer.status).toBe(400)
    expect(refusal(answer).message).toContain('selects 3000 fields')
    // The standard introspection query still runs without a key.
    const standard = await query(getIntrospectionQuery())
    expect(standard.status).toBe(200)
    expect(standard.body.errors).toBeUndefined()
  })

  it('without a key, lists under aliases are stopped by the keyless execution budget', async () => {
    for (const source of [
      aliases(166, 'gpuTypes { lowestPrice(input: {gpuCount: 1}) { stockStatus } }'),
      `{ __schema { types { fields { ${aliases(240, 'type { name }').slice(2, -2)} } } } }`,
      // 840 KB of answer from 5 KB, 150 to 330 ms of the event loop at the keyed budget.
      aliases(100, '__schema { types { name fields { name } } }'),
    ]) {
      const answer = await query(source)
      expect(answer.status).toBe(400)
      const error = refusal(answer)
      expect(error.extensions?.code).toBe('QUERY_TOO_EXPENSIVE')
      expect(error.message).toContain(
        `costs more than ${MAX_KEYLESS_EXECUTION_COST} to run without an API key`,
      )
    }
    // With a key, the last one runs: it costs about 40 000.
    const keyed = await query(
      aliases(100, '__schema { types { name fields { name } } }'),
      TEST_ADMIN_KEY,
    )
    expect(keyed.status).toBe(200)
    expect(keyed.body.errors).toBeUndefined()
  })

  it('an answer over 8 MiB is refused with errors[] instead of sent', async () => {
    // One template whose env is 1 MB; ten aliases of it make about 10 MB.
    const env = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`V${i}`, 'x'.repeat(64 * 1024)]),
    )
    await json(
      await platform.call('/v2/templates', {
        method: 'POST',
        json: { name: 'big', image: 'img:1', env },
      }),
      201,
    )
    const one = await query('{ myself { podTemplates { env { value } } } }', TEST_ADMIN_KEY)
    expect(one.status).toBe(200)
    expect(one.bytes).toBeGreaterThan(1024 * 1024)
    const answer = await query(
      aliases(10, 'myself { podTemplates { env { value } } }'),
      TEST_ADMIN_KEY,
    )
    expect(answer.status).toBe(400)
    const error = refusal(answer)
    expect(error.extensions?.code).toBe('RESPONSE_TOO_LARGE')
    expect(error.message).toContain('larger than 8 MiB')
    expect(answer.bytes).toBeLessThan(1000)
  })

  it('a document that does not parse is a syntax error, never a fault', async () => {
    for (const source of ['{}', '1', '"{}"', '{ gpuTypes(input: {id: "x}) { id } }']) {
      const answer = await query(source, TEST_ADMIN_KEY)
      expect(answer.status, source.slice(0, 40)).toBe(400)
      expect(refusal(answer).message).toMatch(/^Syntax Error: /)
    }
  })

  it('a body that is not JSON, or over 1 MiB, is refused with its status and errors[]', async () => {
    const broken = await graphql('{"query": ', TEST_ADMIN_KEY)
    expect(broken.status).toBe(400)
    expect(refusal(broken).extensions?.code).toBe('MALFORMED_REQUEST')

    const large = await graphql(
      JSON.stringify({ query: `{ myself { id } } # ${'x'.repeat(1024 * 1024)}` }),
    )
    expect(large.status).toBe(413)
    expect(refusal(large).extensions?.code).toBe('PAYLOAD_TOO_LARGE')
  })

  describe('before any key is asked for, the work is bounded by the document', () => {
    it('fragments spread twice each, 24 deep (800 bytes), are refused at once', async () => {
      // Walked once per path before authentication, this held the event loop about 6 s (n = 25:
      // 12.6 s, n = 40: minutes); each fragment is now looked at once.
      const started = performance.now()
      const answer = await query(fanOut(24))
      const took = performance.now() - started
      expect(answer.status).toBe(400)
      expect(refusal(answer).message).toBe(
        `this query selects ${2 ** 24} fields (fragments and aliases expanded); the limit is ${MAX_QUERY_FIELDS}: split it into smaller documents`,
      )
      expect(took).toBeLessThan(1000)
      // 60 deep with a private leaf: not public, so 401, at once too.
      const private60 = await query(fanOut(60, 'myself { id }'))
      expect(private60.status).toBe(401)
    })

    it('a chain of 3 000 fragments (109 KB), which ran without a key, is refused', async () => {
      const answer = await query(chain(3000, 'gpuTypes { id }'))
      expect(answer.status).toBe(400)
      const error = refusal(answer)
      expect(error.extensions?.code).toBe('DOCUMENT_TOO_LARGE')
      expect(error.message).toBe(
        `this document defines more than ${MAX_FRAGMENT_DEFINITIONS} fragments; the limit is ${MAX_FRAGMENT_DEFINITIONS}`,
      )
      // Within the bound, a chain of a public field still runs without a key.
      const within = await query(chain(MAX_FRAGMENT_DEFINITIONS - 1, 'cpuTypes { id }'))
      expect(within.status).toBe(200)
      expect(within.body.errors).toBeUndefined()
    })

    it('same-named fields, which graphql-js compares pairwise, are bounded in every root', async () => {
      // One public field, and an unused fragment of 990 fields: 300 ms to validate, keyless.
      const copies = (n: number) => '__type(name: "Pod") { ofType { name } } '.repeat(n)
      const unused = await query(`{ __typename } fragment U on Query { ${copies(330)} }`)
      expect(unused.status).toBe(400)
      expect(refusal(unused).message).toMatch(/^fragment U selects 990 fields/)
      // Three operations of 498 fields each, one of them picked by name.
      const operations = Array.from({ length: 3 }, (_, i) => `query Q${i} { ${copies(166)} }`)
      const answer = await graphql(
        JSON.stringify({ query: operations.join(' '), operationName: 'Q0' }),
      )
      expect(answer.status).toBe(400)
      expect(refusal(answer).message).toMatch(/^this document selects 1494 fields in all/)
      // One of them alone runs.
      const one = await graphql(JSON.stringify({ query: operations[0], operationName: 'Q0' }))
      expect(one.status).toBe(200)
      expect(one.body.errors).toBeUndefined()
    })

    it('each bound of the document budget answers 400 with errors[], key or no key', async () => {
      const over: Array<[string, string]> = [
        [
          `{ ${rep(MAX_DOCUMENT_TOKENS, () => '__typename')} }`,
          `this document has more than ${MAX_DOCUMENT_TOKENS} tokens`,
        ],
        [
          // Overflowed the parser's stack; refused before any parse now.
          `{ gpuTypes(input: {id: ${'['.repeat(20_000)}}) { id } }`,
          `this document nests {, [ and ( more than ${MAX_DOCUMENT_NESTING} levels deep`,
        ],
        [
          `{ ${rep(MAX_FRAGMENT_SPREADS + 1, () => '...F')} } fragment F on Query { __typename }`,
          `this document spreads fragments (...Name) more than ${MAX_FRAGMENT_SPREADS} times`,
        ],
        [
          `{ __typename ${rep(MAX_DOCUMENT_DIRECTIVES + 1, () => '@include(if: true)')} }`,
          `this document has more than ${MAX_DOCUMENT_DIRECTIVES} directives`,
        ],
        [
          rep(MAX_DOCUMENT_OPERATIONS + 1, (i) => `query Q${i} { __typename }`),
          `this document defines more than ${MAX_DOCUMENT_OPERATIONS} operations`,
        ],
      ]
      for (const [source, message] of over) {
        // Without a key, with a wrong one and with a valid one: the budget comes first.
        for (const key of [null, 'pyd_not-a-key', TEST_ADMIN_KEY]) {
          const answer = await query(source, key)
          expect(answer.status, `${message} (${key})`).toBe(400)
          const error = refusal(answer)
          expect(error.message).toContain(message)
          expect(error.extensions?.code).toBe('DOCUMENT_TOO_LARGE')
          expect((error as { locations?: unknown }).locations).toEqual([
            { line: expect.any(Number), column: expect.any(Number) },
          ])
        }
      }
    })
  })
})
