import type { StoreCommands } from '../cli/store-commands.js'
import type { Config } from '../config/schema.js'
import type { AccountService } from '../domain/accounts/account-service.js'
import { CreditService } from '../domain/billing/credit-service.js'
import { AppError } from '../shared/app-error.js'
import { systemClock } from '../shared/clock.js'
import { KyselyCreditRepo } from '../store/credit-repo.js'
import type { QuotaService } from '../domain/quotas/quota-service.js'
import { accountServiceOf, openMigratedStore, quotaServiceOf } from './store-wiring.js'

/** The CLI commands that work on the store itself (keys, accounts, credits). */
function storeCommands(
  database: string,
  accounts: AccountService,
  credits: CreditService,
  quotas: QuotaService,
): StoreCommands {
  const accountOrAdmin = async (idOrEmail?: string) => {
    const account = idOrEmail
      ? await accounts.findAccount(idOrEmail)
      : await accounts.findAdminAccount()
    if (!account) throw new AppError('NOT_FOUND', `account ${idOrEmail ?? '(admin)'} not found`)
    return account
  }
  return {
    database,
    createKey: async (input) => {
      const account = await accountOrAdmin(input.account)
      return accounts.createApiKey({ ...input, accountId: account.id })
    },
    listKeys: async (idOrEmail) =>
      accounts.listApiKeys(idOrEmail ? (await accountOrAdmin(idOrEmail)).id : undefined),
    revokeKey: (id) => accounts.revokeApiKey(id),
    createAccount: async (input) => {
      const { account, user } = await accounts.createAccount(input)
      return { ...account, email: user.email }
    },
    listAccounts: () => accounts.listAccounts(),
    addCredits: async ({ account, amount, note }) => {
      const { id } = await accountOrAdmin(account)
      const admin = await accounts.findAdminAccount()
      const { credit, entry } = await credits.addCredits({
        accountId: id,
        usd: amount,
        note,
        by: admin?.id ?? null,
      })
      return { ...credit, entry }
    },
    showCredits: async (account) => {
      const { id } = await accountOrAdmin(account)
      return { ...(await credits.credit(id)), entries: await credits.entries(id) }
    },
    setSpendLimit: async (account, usdPerHour) =>
      credits.setSpendLimit((await accountOrAdmin(account)).id, usdPerHour),
    quotas: async (account, patch) => {
      const { id } = await accountOrAdmin(account)
      return {
        accountId: id,
        quotas:
          Object.keys(patch).length > 0 ? await quotas.set(id, patch) : await quotas.report(id),
      }
    },
  }
}

/**
 * Runs `use` with the store-backed commands over a migrated store (creating the admin first).
 * The store must exist unless `init` (docs/cli.md, "Store commands").
 */
export async function withStoreCommands<T>(
  config: Readonly<Config>,
  use: (commands: StoreCommands) => Promise<T>,
  options: { init: boolean },
): Promise<T> {
  const { store } = await openMigratedStore(config, undefined, { mustExist: !options.init })
  try {
    const accounts = accountServiceOf(store, systemClock)
    const admin = await accounts.ensureAdmin({
      email: config.adminEmail,
      adminKey: config.adminKey,
    })
    if (admin.generatedKey) {
      process.stderr.write(
        `Created the admin account; its generated key (shown once): ${admin.generatedKey}\n`,
      )
    }
    const credits = new CreditService(new KyselyCreditRepo(store.db), systemClock)
    const quotas = quotaServiceOf(store, accounts, systemClock)
    return await use(storeCommands(store.displayUrl, accounts, credits, quotas))
  } finally {
    await store.close()
  }
}
