import { AccountPoolService } from '../domain/accounts/account-pools.js'
import { KyselyAccountPoolRepo } from '../store/account-pool-repo.js'
import { ensurePublicModelsAccount } from '../domain/models/models-account.js'
import type { AccountParts, PlatformContext } from './platform-context.js'
import { accountServiceOf, quotaServiceOf, secretBoxFor } from './store-wiring.js'

/** Accounts and the admin (created on the first start), the public models' account, the key. */
export async function wireAccounts(context: PlatformContext): Promise<AccountParts> {
  const { config, store, clock, logger } = context
  const accounts = accountServiceOf(store, clock)
  const admin = await accounts.ensureAdmin({ email: config.adminEmail, adminKey: config.adminKey })
  for (const warning of admin.warnings) logger.warn(warning)
  const { box, key } = await secretBoxFor(config, store, logger)
  const quotas = quotaServiceOf(store, accounts, clock)
  const pools = new AccountPoolService(new KyselyAccountPoolRepo(store.db), () =>
    clock.now().toISOString(),
  )
  return {
    accounts,
    quotas,
    pools,
    generatedAdminKey: admin.generatedKey,
    modelsAccount: await ensurePublicModelsAccount(accounts),
    box,
    encryptionKey: key,
  }
}
