import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WEBHOOK_ERRORS } from '../../src/domain/serverless/webhook-delivery.js'
import { json } from '../support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { TestResolver } from '../support/test-resolver.js'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js'

/**
 * The egress policy of webhooks over real HTTP (docs/security.md "Egress policy"): internal
 * destinations are refused at submission and again at every delivery attempt, and what the
 * account can read of an attempt does not make webhooks a probe of the operator's network.
 * Receivers listen on loopback addresses; names resolve from a TestResolver, so nothing leaves
 * the machine.
 */

/** SQLite always; PostgreSQL too (a database of its own) when PODYARD_TEST_POSTGRES_URL is set. */
const STORES = [
  { name: 'sqlite' },
  ...(process.env[POSTGRES_URL_ENV] ? [{ name: 'postgres' }] : []),
]

async function startOn(
  store: { name: string },
  ...[overrides, options]: Parameters<typeof startTestPlatform>
): Promise<TestPlatform> {
  if (store.name === 'sqlite') return startTestPlatform(overrides, options)
  const database = await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
  const platform = await startTestPlatform({ ...overrides, storeUrl: database.url }, options)
  return {
    ...platform,
    close: async () => {
      await platform.close()
      await database.drop()
    },
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const SETTING = 'webhooks.allowInternal'

interface Attempt {
  attempt: number
  at: string
  outcome: string
  httpStatus?: number
  durationMs?: number
  error?: string
}
interface Deliveries {
  deliveries: Array<{ status: string; attempts: Attempt[] }>
}

/** The helpers of one platform with one endpoint whose jobs the test works itself. */
async function withEndpoint(platform: TestPlatform) {
  const created = await json<{ id: string }>(
    await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name: 'egress', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    }),
    201,
  )
  const endpointId = created.id
  const submit = (webhook: string, operation: 'run' | 'runsync' = 'run') =>
    platform.call(`/v2/${endpointId}/${operation}`, {
      method: 'POST',
      json: { input: { n: 1 }, webhook },
    })
  /** Drops the queued jobs, so that no later `work` finishes (and delivers) one of them. */
  const purge = async () =>
    json(await platform.call(`/v2/${endpointId}/purge-queue`, { method: 'POST' }))
  /** Takes the next job as a worker and completes it. */
  const work = async () => {
    const base = `${platform.url}/v2/${endpointId}`
    const taken = await json<{ id: string }>(
      await fetch(`${base}/job-take/w1?gpu=x&wait=2000&job_in_progress=0`, {
        headers: { authorization: TEST_ADMIN_KEY },
      }),
    )
    const done = await fetch(`${base}/job-done/w1/${taken.id}?gpu=x&isStream=false`, {
      method: 'POST',
      headers: { authorization: TEST_ADMIN_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ output: 'ok' }),
    })
    expect(done.status).toBe(200)
    return taken.id
  }
  /** Submits with `webhook`, completes the job, and waits until its delivery is finished. */
  const deliver = async (webhook: string): Promise<{ text: string; body: Deliveries }> => {
    // The job worked below must be this one, whatever an earlier test left queued.
    await purge()
    await json(await submit(webhook))
    const id = await work()
    for (let i = 0; i < 200; i++) {
      const response = await platform.call(`/v2/serverless/${endpointId}/jobs/${id}/webhook`)
      const text = await response.text()
      expect(response.status, text).toBe(200)
      const body = JSON.parse(text) as Deliveries
      if (body.deliveries[0] && body.deliveries[0].status !== 'pending') return { text, body }
      await sleep(20)
    }
    throw new Error(`the delivery of ${id} stayed pending`)
  }
  return { submit, purge, work, deliver }
}

async function expectRefused(response: Response, ...fragments: string[]) {
  const text = await response.text()
  expect(response.status, text).toBe(400)
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  const problem = JSON.parse(text) as { detail: string; errors: string[] }
  expect(problem.errors).toHaveLength(1)
  const [error] = problem.errors
  expect(error).toMatch(/^body\.webhook: /)
  for (const fragment of fragments) expect(error).toContain(fragment)
  expect(problem.detail).toContain(error)
  return error!
}

describe.each(STORES)('webhook egress on $name: the default policy (no allow-list)', (store) => {
  let platform: TestPlatform
  let resolver: TestResolver
  let api: Awaited<ReturnType<typeof withEndpoint>>
  let receiver: WebhookReceiver

  beforeAll(async () => {
    resolver = new TestResolver()
    platform = await startOn(
      store,
      { webhooks: { retryDelayMs: 50, timeoutMs: 2_000, allowInternal: [] } },
      { resolveHost: resolver.resolve },
    )
    api = await withEndpoint(platform)
    receiver = await startWebhookReceiver()
  })
  afterAll(async () => {
    await receiver.close()
    await platform.close()
  })

  const ALLOWABLE = `unless the operator allows them (${SETTING})`

  it.each([
    [
      'http://169.254.169.254/latest/meta-data/',
      '169.254.169.254 is a link-local address (169.254.0.0/16, where cloud metadata services answer)',
    ],
    ['http://10.0.0.1/', '10.0.0.1 is a private address (RFC 1918)'],
    ['http://172.31.255.255/', '172.31.255.255 is a private address (RFC 1918)'],
    ['http://192.168.1.1/', '192.168.1.1 is a private address (RFC 1918)'],
    ['http://100.64.0.1/', '100.64.0.1 is a carrier-grade NAT address'],
    ['http://127.0.0.1:9/hook', '127.0.0.1 is a loopback address (127.0.0.0/8)'],
    ['http://0.0.0.0/', '0.0.0.0 is the unspecified address'],
    ['http://0.1.2.3/', '0.1.2.3 is a "this network" address'],
    ['http://224.0.0.1/', '224.0.0.1 is a multicast address'],
    ['http://255.255.255.255/', '255.255.255.255 is the limited broadcast address'],
    ['http://240.0.0.1/', '240.0.0.1 is a reserved address'],
    ['http://192.0.2.10/', '192.0.2.10 is a documentation address'],
    ['http://198.18.0.1/', '198.18.0.1 is a benchmarking address'],
    ['http://[::1]/', '::1 is the loopback address (::1)'],
    ['http://[::]/', ':: is the unspecified address (::)'],
    ['http://[fd00::1]/', 'fd00::1 is a unique-local address (fc00::/7, RFC 4193)'],
    ['http://[fe80::1]/', 'fe80::1 is a link-local address (fe80::/10)'],
    ['http://[ff02::1]/', 'ff02::1 is a multicast address (ff00::/8)'],
    [
      'http://[::ffff:127.0.0.1]/',
      '::ffff:7f00:1 is the IPv4-mapped form (::ffff:0:0/96) of 127.0.0.1, a loopback address',
    ],
    ['http://[::ffff:a9fe:a9fe]/', 'of 169.254.169.254, a link-local address'],
    [
      'http://[64:ff9b::10.0.0.1]/',
      '64:ff9b::a00:1 is the NAT64 form (64:ff9b::/96, RFC 6052) of 10.0.0.1, a private address',
    ],
    ['http://[::127.0.0.1]/', 'the IPv4-compatible form (::/96, deprecated) of 127.0.0.1'],
    // Hex, decimal, octal and short spellings are normalised by the URL parser first.
    ['http://0x7f.0.0.1/', '127.0.0.1 is a loopback address'],
    ['http://2130706433/', '127.0.0.1 is a loopback address'],
    ['http://0177.0.0.1/', '127.0.0.1 is a loopback address'],
    ['http://127.1/', '127.0.0.1 is a loopback address'],
    ['http://0xa9fea9fe/', '169.254.169.254 is a link-local address'],
    ['http://localhost:8080/', 'localhost is a loopback name (RFC 6761)'],
    ['http://api.localhost/', 'api.localhost is a loopback name (RFC 6761)'],
  ])('refuses %s at submission (400 naming the rule)', async (webhook, said) => {
    await expectRefused(await api.submit(webhook), said, ALLOWABLE)
  })

  it('refuses them on /runsync too', async () => {
    await expectRefused(await api.submit('http://10.0.0.1/', 'runsync'), '10.0.0.1 is a private')
    await expectRefused(await api.submit('http://[::1]/', 'runsync'), '::1 is the loopback')
  })

  it('refuses a URL that is not http or https', async () => {
    const error = await expectRefused(await api.submit('ftp://hooks.example.com/x'))
    expect(error).toBe('body.webhook: must be an http or https URL (got ftp:)')
    await expectRefused(await api.submit('data:,hello'), 'must be an http or https URL (got data:)')
  })

  it('refuses a name that resolves to an internal address, without saying the address', async () => {
    resolver.set('db.corp.example', ['10.20.30.40'])
    resolver.set('split.example', ['93.184.216.34', '127.0.0.1'])
    const error = await expectRefused(
      await api.submit('https://db.corp.example/hook'),
      'db.corp.example resolves to a private address (RFC 1918)',
      ALLOWABLE,
    )
    expect(error).not.toContain('10.20.30.40')
    await expectRefused(await api.submit('http://split.example/'), 'resolves to a loopback address')
  })

  it('accepts a public name, and one that does not resolve (it is checked at delivery)', async () => {
    resolver.set('hooks.example.com', ['93.184.216.34'])
    await json(await api.submit('https://hooks.example.com/hook'))
    await json(await api.submit('https://not-yet.example.com/hook'))
    // Neither job runs, so nothing is sent to the public address.
    await api.purge()
  })

  it('DNS rebinding: public at submission, internal at delivery: never connected', async () => {
    // The receiver listens on 127.0.0.1; the name points at it once the job is accepted.
    resolver.set('rebind.example', ['93.184.216.34'], ['127.0.0.1'])
    const asked = resolver.asked.length
    const { text, body } = await api.deliver(`http://rebind.example:${receiver.port}/hook`)
    expect(receiver.received).toHaveLength(0)
    // Submission once, then every attempt asks again: the submission's answer is never reused.
    expect(resolver.asked.slice(asked)).toEqual(Array(4).fill('rebind.example'))
    expect(body.deliveries[0]!.status).toBe('failed')
    expect(body.deliveries[0]!.attempts).toEqual(
      [1, 2, 3].map((attempt) => ({
        attempt,
        at: expect.any(String) as string,
        outcome: 'failed',
        error: WEBHOOK_ERRORS.refused,
      })),
    )
    // Nothing says what the name resolved to.
    expect(text).not.toContain('127.0.0.1')
    expect(text).not.toContain('loopback')
  })
})

describe.each(STORES)('webhook egress on $name: an operator allow-list', (store) => {
  let platform: TestPlatform
  let resolver: TestResolver
  let api: Awaited<ReturnType<typeof withEndpoint>>
  /** Allowed: 127.0.0.2 is on the allow-list. */
  let allowed: WebhookReceiver
  /** Allowed by name: hooks.internal resolves to 127.0.0.3 and is on the allow-list. */
  let byName: WebhookReceiver
  /** Not allowed: 127.0.0.1 is loopback and not on the allow-list. */
  let loopback: WebhookReceiver

  beforeAll(async () => {
    resolver = new TestResolver()
    platform = await startOn(
      store,
      {
        webhooks: {
          retryDelayMs: 50,
          timeoutMs: 2_000,
          allowInternal: ['127.0.0.2', 'hooks.internal'],
        },
      },
      { resolveHost: resolver.resolve },
    )
    api = await withEndpoint(platform)
    allowed = await startWebhookReceiver('127.0.0.2')
    byName = await startWebhookReceiver('127.0.0.3')
    loopback = await startWebhookReceiver('127.0.0.1')
    resolver.set('hooks.internal', ['127.0.0.3'])
  })
  afterAll(async () => {
    for (const receiver of [allowed, byName, loopback]) await receiver.close()
    await platform.close()
  })

  it('delivers to an allowed internal receiver, by address and by name', async () => {
    const { body } = await api.deliver(allowed.url)
    expect(body.deliveries[0]).toMatchObject({
      status: 'delivered',
      attempts: [{ attempt: 1, httpStatus: 200, outcome: 'delivered' }],
    })
    expect(allowed.received).toHaveLength(1)

    // The name resolves only through the platform's resolver: the connection goes to the
    // address that was checked.
    const named = await api.deliver(`http://hooks.internal:${byName.port}/hook`)
    expect(named.body.deliveries[0]!.status).toBe('delivered')
    expect(byName.received).toHaveLength(1)
    expect(byName.received[0]!.headers.host).toBe(`hooks.internal:${byName.port}`)
  })

  it('still refuses what the allow-list does not name', async () => {
    await expectRefused(await api.submit(loopback.url), '127.0.0.1 is a loopback address')
    await expectRefused(await api.submit('http://127.0.0.3/'), '127.0.0.3 is a loopback address')
  })

  it("refuses this server's own listener whatever the allow-list says", async () => {
    const port = new URL(platform.url).port
    const own = await startTestPlatform(
      {
        webhooks: {
          retryDelayMs: 50,
          timeoutMs: 2_000,
          allowInternal: ['127.0.0.0/8', '::ffff:0:0/96'],
        },
      },
      { resolveHost: resolver.resolve },
    )
    try {
      const ownApi = await withEndpoint(own)
      const ownPort = new URL(own.url).port
      const error = await expectRefused(
        await ownApi.submit(`http://127.0.0.1:${ownPort}/v2/serverless`),
        `127.0.0.1 is this server's own listener (port ${ownPort}); the platform never sends requests to itself`,
      )
      expect(error).not.toContain(SETTING)
      await expectRefused(
        await ownApi.submit(`http://[::ffff:127.0.0.1]:${ownPort}/`),
        "this server's own listener",
      )
      // Another port of an allowed address is fine (the first platform's, here).
      await json(await ownApi.submit(`http://127.0.0.1:${port}/hook`))
    } finally {
      await own.close()
    }
  })

  it('does not follow a redirect from an allowed receiver to an internal one', async () => {
    // The redirect's target is refused when it is submitted itself...
    await expectRefused(await api.submit(loopback.url), '127.0.0.1 is a loopback address')
    // ...and a redirect does not reach it either: redirects are never followed.
    allowed.script(...Array(3).fill({ redirectTo: loopback.url }))
    const before = allowed.received.length
    const { body } = await api.deliver(allowed.url)
    expect(allowed.received.length - before).toBe(3)
    expect(loopback.received).toHaveLength(0)
    expect(body.deliveries[0]).toMatchObject({
      status: 'failed',
      attempts: [
        { attempt: 1, httpStatus: 302, outcome: 'failed' },
        { attempt: 2, httpStatus: 302, outcome: 'failed' },
        { attempt: 3, httpStatus: 302, outcome: 'failed' },
      ],
    })
  })

  it('shows an attempt without an answer as a class only: no socket error, no duration', async () => {
    // A closed port of an allowed address: the connection is refused at once.
    const closed = await startWebhookReceiver('127.0.0.2')
    const url = closed.url
    await closed.close()
    const { text, body } = await api.deliver(url)
    expect(body.deliveries[0]!.status).toBe('failed')
    for (const attempt of body.deliveries[0]!.attempts) {
      expect(Object.keys(attempt).sort()).toEqual(['at', 'attempt', 'error', 'outcome'])
      expect(attempt.error).toBe(WEBHOOK_ERRORS.noAnswer)
    }
    expect(text).not.toMatch(/ECONNREFUSED|connect|durationMs/)
  })

  it('shows a name that stopped resolving as such, and nothing more', async () => {
    resolver.set('gone.internal', ['127.0.0.2'], [])
    const { text, body } = await api.deliver(`http://gone.internal:${allowed.port}/hook`)
    expect(body.deliveries[0]!.attempts.map((a) => a.error)).toEqual(
      Array(3).fill(WEBHOOK_ERRORS.unresolved),
    )
    expect(text).not.toContain('ENOTFOUND')
  })
})

describe('webhook egress: configuration', () => {
  it('refuses to start with an allow-list entry it cannot read', async () => {
    await expect(
      startTestPlatform({
        webhooks: { retryDelayMs: 50, timeoutMs: 2_000, allowInternal: ['10.0.0.0/33'] },
      }),
    ).rejects.toThrow(
      /webhooks\.allowInternal: "10\.0\.0\.0\/33" is not an IP address, a CIDR block/,
    )
  })
})
