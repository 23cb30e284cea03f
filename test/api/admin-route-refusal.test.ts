import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { operationsOf, type OpenAPIDocument } from '../support/openapi-operations.js'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  type CallInit,
  type TestPlatform,
} from '../support/platform.js'

/**
 * A member is refused an admin route before anything of the request is read: an invalid body,
 * query or path answers the same 403 as a valid one, so that the validation errors of admin
 * routes tell a member nothing of their schemas.
 */
describe('admin routes refuse a member before validating the request', () => {
  let platform: TestPlatform
  let memberKey: string

  beforeAll(async () => {
    platform = await startTestPlatform()
    memberKey = await otherAccountKey(platform, 'member@example.com')
  })
  afterAll(() => platform.close())

  const asMember = (path: string, init: CallInit = {}) =>
    callJson(platform, path, { ...init, key: memberKey })

  /** The same route, once with a request the admin could send and once with a broken one. */
  const pairs: Array<{ route: string; valid: [string, CallInit]; invalid: [string, CallInit] }> = [
    {
      route: 'POST /v2/admin/accounts',
      valid: ['/v2/admin/accounts', { method: 'POST', json: { email: 'new@example.com' } }],
      invalid: ['/v2/admin/accounts', { method: 'POST', json: { email: 7, role: 'admin' } }],
    },
    {
      route: 'POST /v2/admin/accounts/:accountId/credits',
      valid: ['/v2/admin/accounts/acct/credits', { method: 'POST', json: { amount: 5 } }],
      invalid: ['/v2/admin/accounts/acct/credits', { method: 'POST', json: { amount: -1e9 } }],
    },
    {
      route: 'PATCH /v2/admin/accounts/:accountId',
      valid: ['/v2/admin/accounts/acct', { method: 'PATCH', json: { spendLimit: 10 } }],
      invalid: ['/v2/admin/accounts/acct', { method: 'PATCH', json: { spendLimit: 'lots' } }],
    },
    {
      route: 'PATCH /v2/admin/accounts/:accountId/quotas',
      valid: ['/v2/admin/accounts/acct/quotas', { method: 'PATCH', json: { gpus: 2 } }],
      invalid: ['/v2/admin/accounts/acct/quotas', { method: 'PATCH', json: { cpus: -1 } }],
    },
    {
      route: 'PUT /v2/admin/accounts/:accountId/pools',
      valid: ['/v2/admin/accounts/acct/pools', { method: 'PUT', json: { pools: ['a'] } }],
      invalid: ['/v2/admin/accounts/acct/pools', { method: 'PUT', json: { pools: 'a' } }],
    },
    {
      route: 'POST /v2/admin/hosts/:hostId/drain',
      valid: ['/v2/admin/hosts/h1/drain?migrate=true', { method: 'POST' }],
      invalid: ['/v2/admin/hosts/h1/drain?migrate=maybe', { method: 'POST' }],
    },
    {
      route: 'POST /v2/admin/hosts/:hostId/gpus/:index/reset',
      valid: ['/v2/admin/hosts/h1/gpus/0/reset', { method: 'POST' }],
      invalid: ['/v2/admin/hosts/h1/gpus/first/reset', { method: 'POST' }],
    },
    {
      route: 'POST /v2/admin/fleet/diff',
      valid: ['/v2/admin/fleet/diff', { method: 'POST', json: { hosts: [] } }],
      invalid: ['/v2/admin/fleet/diff', { method: 'POST', json: { hosts: 5 } }],
    },
    {
      route: 'POST /v2/admin/accounts (body that is no JSON)',
      valid: ['/v2/admin/accounts', { method: 'POST', json: { email: 'new@example.com' } }],
      invalid: [
        '/v2/admin/accounts',
        { method: 'POST', body: '{"email":', headers: { 'content-type': 'application/json' } },
      ],
    },
  ]

  it.each(pairs)('$route: an invalid request gets the valid one’s 403', async (pair) => {
    const valid = await asMember(...pair.valid)
    const invalid = await asMember(...pair.invalid)
    expect(valid.status).toBe(403)
    expect(valid.body.detail).toMatch(/^only the admin account may /)
    expect(invalid).toEqual(valid)
  })

  it('every admin operation of the document refuses a member’s broken request with 403', async () => {
    const document = (await callJson(platform, '/v2/openapi.json')).body as OpenAPIDocument
    const admin = operationsOf(document).filter((operation) =>
      operation.path.startsWith('/v2/admin/'),
    )
    expect(admin.length).toBeGreaterThan(15)
    for (const operation of admin) {
      // Path parameters no integer schema takes, and a query and body no schema takes.
      const path = operation.path.replace(/\{[^}]+\}/g, 'x-1.5')
      const answer = await asMember(`${path}?migrate=maybe&unknown=1`, {
        method: operation.method,
        ...(['GET', 'HEAD', 'DELETE'].includes(operation.method)
          ? {}
          : { json: { notAField: true } }),
      })
      expect({ operation: operation.operationId, status: answer.status }).toEqual({
        operation: operation.operationId,
        status: 403,
      })
      expect(answer.body.detail).toMatch(/^only the admin account may /)
    }
  })
})
