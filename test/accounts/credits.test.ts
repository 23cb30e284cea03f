import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { CreditService } from '../../src/domain/billing/credit-service.js'
import type { CreditEntry } from '../../src/domain/billing/credits.js'
import { ManualClock } from '../../src/shared/clock.js'
import { newId } from '../../src/shared/ids.js'
import { KyselyCreditRepo } from '../../src/store/credit-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { runCli } from '../support/cli.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { addTestAccount, testStores } from '../support/stores.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe.each(testStores())('credits on $name', ({ open }) => {
  let store: Store
  let repo: KyselyCreditRepo
  let accountId: string

  const entry = (amountNano: number, at: string): CreditEntry => ({
    id: newId.creditEntry(),
    accountId,
    amountNano,
    kind: amountNano >= 0 ? 'credit' : 'charge',
    note: 'test',
    createdBy: null,
    createdAt: at,
  })

  beforeEach(async () => {
    store = await open()
    repo = new KyselyCreditRepo(store.db)
    accountId = await addTestAccount(store)
  })
  afterEach(async () => {
    await store.close()
  })

  it('starts at a zero balance and the default spend limit of 80 USD/h', async () => {
    expect(await repo.credit(accountId)).toEqual({
      accountId,
      balanceNano: 0,
      spendLimitPerHour: 80,
    })
    expect(await repo.credit('acct_nobody')).toBeUndefined()
  })

  it('moves the balance with every entry, exactly, even when entries race', async () => {
    await repo.append(entry(25_000_000_000, '2026-01-01T00:00:01.000Z'))
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        repo.append(entry(-94_444, `2026-01-01T00:01:${String(i).padStart(2, '0')}.000Z`)),
      ),
    )
    const credit = await repo.credit(accountId)
    expect(credit?.balanceNano).toBe(25_000_000_000 - 20 * 94_444)
    const entries = await repo.entries(accountId, 5)
    expect(entries).toHaveLength(5)
    expect(entries[0]!.createdAt).toBe('2026-01-01T00:01:19.000Z')
    expect(entries[0]!.amountNano).toBe(-94_444)
  })

  it('keeps the spend limit per account', async () => {
    const other = await addTestAccount(store)
    expect((await repo.setSpendLimit(accountId, 12.5))?.spendLimitPerHour).toBe(12.5)
    expect((await repo.credit(other))?.spendLimitPerHour).toBe(80)
    expect(await repo.setSpendLimit('acct_nobody', 1)).toBeUndefined()
  })

  it('refuses amounts outside a cent to 100 000 USD, and sub-cent amounts', async () => {
    const credits = new CreditService(repo, new ManualClock(new Date('2026-01-01T00:00:00Z')))
    for (const usd of [0, -5, 0.001, 100_000.01, Number.NaN, 12.345]) {
      await expect(credits.addCredits({ accountId, usd, by: null })).rejects.toMatchObject({
        code: 'VALIDATION_FAILED',
      })
    }
    const { credit } = await credits.addCredits({ accountId, usd: 0.1 + 0.2, by: null })
    expect(credit.balance).toBe(0.3)
    await expect(
      credits.addCredits({ accountId: 'acct_x', usd: 1, by: null }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' })
  })
})

describe('credits over REST, GraphQL and the CLI', () => {
  let platform: TestPlatform
  let otherKey: string
  let otherId: string

  const graphqlMyself = async (key: string) => {
    const response = await fetch(`${platform.url}/graphql?api_key=${key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ myself { id clientBalance spendLimit } }' }),
    })
    return ((await response.json()) as Json).data.myself
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    otherKey = await otherAccountKey(platform, 'credits-other@example.com')
    otherId = ((await (await platform.call('/v2/account', { key: otherKey })).json()) as Json).id
  })
  afterAll(async () => {
    await platform?.close()
  })

  it('shows the balance and spend limit in /v2/account and GraphQL myself', async () => {
    const account = (await (await platform.call('/v2/account', { key: otherKey })).json()) as Json
    expect(account).toMatchObject({ balance: 0, spendLimit: 80 })
    expect(await graphqlMyself(otherKey)).toEqual({ id: otherId, clientBalance: 0, spendLimit: 80 })
  })

  it('lets the admin add credits and set the spend limit, recorded in the ledger', async () => {
    const added = await platform.call(`/v2/admin/accounts/${otherId}/credits`, {
      method: 'POST',
      json: { amount: 25.5, note: 'welcome credit' },
    })
    expect(added.status).toBe(200)
    expect(await added.json()).toMatchObject({
      accountId: otherId,
      balance: 25.5,
      spendLimit: 80,
      entry: {
        amount: 25.5,
        kind: 'credit',
        note: 'welcome credit',
        createdBy: expect.any(String),
      },
    })
    const limited = await platform.call(`/v2/admin/accounts/${otherId}`, {
      method: 'PATCH',
      json: { spendLimit: 5 },
    })
    expect(await limited.json()).toEqual({ accountId: otherId, balance: 25.5, spendLimit: 5 })
    expect(await graphqlMyself(otherKey)).toEqual({
      id: otherId,
      clientBalance: 25.5,
      spendLimit: 5,
    })
    const ledger = (await (
      await platform.call(`/v2/admin/accounts/${otherId}/credits`)
    ).json()) as Json
    expect(ledger.entries).toEqual([
      expect.objectContaining({ amount: 25.5, note: 'welcome credit' }),
    ])
  })

  it('refuses non-admins (403), unknown accounts (404) and bad amounts (422)', async () => {
    const self = await platform.call(`/v2/admin/accounts/${otherId}/credits`, {
      method: 'POST',
      key: otherKey,
      json: { amount: 1000 },
    })
    expect(self.status).toBe(403)
    expect(((await self.json()) as Json).detail).toMatch(/only the admin account/)
    const unknown = await platform.call('/v2/admin/accounts/acct_nobody/credits', {
      method: 'POST',
      json: { amount: 1 },
    })
    expect(unknown.status).toBe(404)
    for (const body of [{ amount: 0 }, { amount: 1.234 }, { amount: 5, extra: 1 }, {}]) {
      const bad = await platform.call(`/v2/admin/accounts/${otherId}/credits`, {
        method: 'POST',
        json: body,
      })
      expect(bad.status, JSON.stringify(body)).toBe(422)
      expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    }
    const negative = await platform.call(`/v2/admin/accounts/${otherId}`, {
      method: 'PATCH',
      json: { spendLimit: -1 },
    })
    expect(negative.status).toBe(422)
  })

  it('keeps /v2/admin out of the job API', async () => {
    const response = await platform.call('/v2/admin/run', { method: 'POST', json: { input: {} } })
    expect(response.status).toBe(404)
    expect(((await response.json()) as Json).detail).toMatch(/^no route/)
  })

  it('adds and shows credits with the CLI on the store', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-credits-cli-'))
    const withDir = (...args: string[]) => [...args, '--data-dir', dataDir]
    try {
      const created = await runCli(
        withDir('accounts', 'create', '--email', 'dev@example.com', '--json', '--init'),
      )
      expect(created.code).toBe(0)
      const added = await runCli(
        withDir('credits', 'add', 'dev@example.com', '12.50', '--note', 'trial', '--json'),
      )
      expect(added.code, added.stderr).toBe(0)
      expect(JSON.parse(added.stdout)).toMatchObject({ balance: 12.5, entry: { note: 'trial' } })
      const limit = await runCli(withDir('credits', 'set-spend-limit', 'dev@example.com', '3'))
      expect(limit.stdout).toMatch(/Spend limit of acct_\w+: \$3\.00\/h\./)
      const shown = await runCli(withDir('credits', 'show', 'dev@example.com'))
      expect(shown.stdout).toMatch(/balance \$12\.50, spend limit \$3\.00\/h/)
      expect(shown.stdout).toMatch(/\$12\.50\s+credit\s+trial/)
      const bad = await runCli(withDir('credits', 'add', 'dev@example.com', 'ten'))
      expect(bad.code).not.toBe(0)
      expect(bad.stderr).toMatch(/"ten" is not an amount in USD/)
      const tooBig = await runCli(withDir('credits', 'add', 'dev@example.com', '1000000'))
      expect(tooBig.code).not.toBe(0)
      expect(tooBig.stderr).toMatch(/amount: must be between 0.01 and 100000 USD/)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})
