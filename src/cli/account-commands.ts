import type { Command } from 'commander'
import { clientFrom, withClientOptions, type ClientFlags } from './client-options.js'
import { formatUsd } from './format-usd.js'

interface AccountJson {
  id: string
  name: string
  email: string
  role: string
  createdAt: string
  balance: number
  spendLimit: number
  balanceEnforced?: boolean
}

/** Said beside the balance when nothing acts on it (config `billing.enforce: false`). */
export const NOT_ENFORCED_NOTE =
  '(not enforced: this server runs everything whatever the balance; billing.enforce is off)'

/** `podyard account`: who the key belongs to, and the account's balance (GET /v2/account). */
export function addAccountCommand(program: Command, deps: { print(text: string): void }): void {
  withClientOptions(
    program
      .command('account')
      .description('who the API key belongs to: the account, its role, balance and spend limit'),
  ).action(async (flags: ClientFlags) => {
    const account = await clientFrom(flags).get<AccountJson>('/v2/account')
    deps.print(
      flags.json
        ? JSON.stringify(account, null, 2)
        : [
            `account      ${account.id} (${account.name})`,
            `email        ${account.email}`,
            `role         ${account.role}`,
            `balance      ${formatUsd(account.balance)}${account.balanceEnforced === false ? ` ${NOT_ENFORCED_NOTE}` : ''}`,
            `spend limit  ${formatUsd(account.spendLimit)}/h${account.balanceEnforced === false ? ' (not enforced)' : ''}`,
          ].join('\n'),
    )
  })
}
