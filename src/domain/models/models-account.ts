import type { Account } from '../accounts/account.js'

/**
 * The account that owns the public models' endpoints (docs/public-endpoints.md, "Who owns
 * what"): a dedicated account with no API key, so nobody can sign in as it, list its endpoints
 * or reach its workers; callers see only the models. Found again by this email on every start.
 */
export const PUBLIC_MODELS_ACCOUNT_EMAIL = 'public-models@podyard.internal'
export const PUBLIC_MODELS_ACCOUNT_NAME = 'podyard public models'

export interface ModelsAccountDeps {
  findAccount(idOrEmail: string): Promise<Account | undefined>
  createAccount(input: { email: string; name?: string }): Promise<{ account: Account }>
}

export async function ensurePublicModelsAccount(accounts: ModelsAccountDeps): Promise<Account> {
  const found = await accounts.findAccount(PUBLIC_MODELS_ACCOUNT_EMAIL)
  if (found) return found
  return (
    await accounts.createAccount({
      email: PUBLIC_MODELS_ACCOUNT_EMAIL,
      name: PUBLIC_MODELS_ACCOUNT_NAME,
    })
  ).account
}
