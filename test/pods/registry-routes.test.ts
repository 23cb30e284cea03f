import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registryRoutes } from '../../src/api/rest/registry-routes.js'
import { restGuard } from '../../src/api/http/authentication.js'
import { installProblemHandlers } from '../../src/api/http/problem.js'
import { RateLimiter } from '../../src/api/http/rate-limiter.js'
import { validatorCompiler } from '../../src/api/http/validation.js'
import { AccountService } from '../../src/domain/accounts/account-service.js'
import { RegistryService } from '../../src/domain/registries/registry-service.js'
import {
  SecretBox,
  generateEncryptionKey,
  parseEncryptionKey,
} from '../../src/domain/registries/secret-box.js'
import { systemClock } from '../../src/shared/clock.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import { KyselyApiKeyRepo } from '../../src/store/api-key-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyRegistryRepo } from '../../src/store/registry-repo.js'
import { testStores } from '../support/stores.js'

const PASSWORD = 'route-Passw0rd-4b7d'
const USERNAME = 'route-user-e21c'

/**
 * The registry routes on their own, with the real guard, validation and problem handling, and
 * the most verbose logging there is: nothing the routes or Fastify log may hold the password.
 */
describe('registry routes: what is logged and serialized', () => {
  let store: Store
  let app: FastifyInstance
  let key: string
  let accountId: string
  let registries: RegistryService
  const logLines: string[] = []

  beforeAll(async () => {
    store = await testStores()[0]!.open()
    const accounts = new AccountService(
      new KyselyAccountRepo(store.db),
      new KyselyApiKeyRepo(store.db),
      systemClock,
    )
    const { account } = await accounts.createAccount({ email: 'logs@example.com' })
    accountId = account.id
    key = (
      await accounts.createApiKey({ accountId: account.id, name: 't', permission: 'READ_WRITE' })
    ).secret
    registries = new RegistryService({
      repo: new KyselyRegistryRepo(store.db),
      box: new SecretBox(parseEncryptionKey(generateEncryptionKey())),
      clock: systemClock,
      usersOf: async () => ['pod abc123 (trainer)'],
    })
    const logger: FastifyBaseLogger = pino(
      { level: 'trace' },
      { write: (line: string) => void logLines.push(line) },
    )
    app = Fastify({ loggerInstance: logger }).withTypeProvider<TypeBoxTypeProvider>()
    app.setValidatorCompiler(validatorCompiler)
    installProblemHandlers(app)
    await app.register(
      async (scope) => {
        scope.addHook(
          'onRequest',
          restGuard({
            accounts,
            rateLimiter: new RateLimiter({ minute: 1000, hour: 1000, day: 1000 }, systemClock),
          }),
        )
        await scope.register(registryRoutes, { registries })
      },
      { prefix: '/v2' },
    )
    await app.ready()
  })
  afterAll(async () => {
    await app?.close()
    await store?.close()
  })

  const inject = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: string) =>
    app.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${key}`,
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(payload === undefined ? {} : { payload }),
    })

  it('serializes only id and name, and logs no credential on success or failure', async () => {
    const body = (extra: Record<string, unknown> = {}) =>
      JSON.stringify({ name: 'hub', username: USERNAME, password: PASSWORD, ...extra })
    const created = await inject('POST', '/v2/registries', body())
    expect(created.statusCode).toBe(201)
    const registry = created.json<{ id: string }>()
    expect(Object.keys(registry).sort()).toEqual(['id', 'name'])

    const responses = [
      created,
      await inject('GET', '/v2/registries'),
      await inject('GET', `/v2/registries/${registry.id}`),
      await inject('POST', '/v2/registries', body({ extra: PASSWORD })),
      await inject('POST', '/v2/registries', body({ name: 'hub' })),
      await inject('POST', '/v2/registries', `{"username":"${USERNAME}","password":"${PASSWORD}"`),
      await inject('DELETE', `/v2/registries/${registry.id}`),
    ]
    expect(responses.map((r) => r.statusCode)).toEqual([201, 200, 200, 422, 400, 400, 400])
    expect(responses[6]!.json<{ detail: string }>().detail).toBe(
      `registry ${registry.id} (hub) is used by pod abc123 (trainer); remove it from them first`,
    )

    // The data does hold both: it is the routes that keep them in.
    expect(await registries.credentials(accountId, registry.id)).toEqual({
      username: USERNAME,
      password: PASSWORD,
    })
    expect(logLines.length).toBeGreaterThan(10)
    for (const text of [...responses.map((r) => r.body), ...logLines]) {
      expect(text).not.toContain(PASSWORD)
      expect(text).not.toContain(USERNAME)
    }
  })
})
