import { getIntrospectionQuery } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { json } from './support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from './support/platform.js'

/**
 * What one GraphQL request may cost (docs/graphql.md, "Limits"; issue 16): introspection counts
 * against the field limit, running is bounded by an execution budget, answers by a size cap,
 * bodies by 1 MiB; each refusal is `errors[]`, and none needs a key to be tested.
 */

interface GraphqlAnswer {
  status: number
  body: { data: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> }
  bytes: number
}

const aliases = (n: number, selection: string) =>
  `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${selection}`).join(' ')} }`

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

  it('without a key, 2 000 aliases of introspection are refused by the field limit', async () => {
    const answer = await query(aliases(2000, '__schema { types { name } }'))
    expect(answer.status).toBe(400)
    expect(refusal(answer).message).toContain('selects 6000 fields')
    // The standard introspection query still runs without a key.
    const standard = await query(getIntrospectionQuery())
    expect(standard.status).toBe(200)
    expect(standard.body.errors).toBeUndefined()
  })

  it('without a key, lists under aliases are stopped by the execution budget', async () => {
    for (const source of [
      aliases(333, 'gpuTypes { lowestPrice(input: {gpuCount: 1}) { stockStatus } }'),
      `{ __schema { types { fields { ${aliases(330, 'type { name }').slice(2, -2)} } } } }`,
    ]) {
      const answer = await query(source)
      expect(answer.status).toBe(400)
      const error = refusal(answer)
      expect(error.extensions?.code).toBe('QUERY_TOO_EXPENSIVE')
      expect(error.message).toContain('costs more than 100000 to run')
    }
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
    for (const source of [
      '{}',
      '1',
      '"{}"',
      `{ gpuTypes(input: {id: ${'['.repeat(20_000)}}) { id } }`,
    ]) {
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
})
