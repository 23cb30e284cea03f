import type { Account } from '../api/types'
import { perHour, usd } from './format'

/**
 * Said beside the balance when nothing acts on it (config `billing.enforce: false`, the
 * default): a $0.00 balance would otherwise read as a limit. The CLI's words
 * (src/cli/account-commands.ts), so that both say the same.
 */
export const NOT_ENFORCED_NOTE =
  '(not enforced: this server runs everything whatever the balance; billing.enforce is off)'
/** The short form, beside the spend limit and in the header. */
export const NOT_ENFORCED_SHORT = '(not enforced)'

/** Only an explicit `false` says so: a server without the field says nothing either way. */
export const balanceNotEnforced = (account: Account) => account.balanceEnforced === false

/** The account's balance, spend now and spend limit, as the stat tiles of a page. */
export function SpendStats({ account }: { account: Account }) {
  const notEnforced = balanceNotEnforced(account)
  return (
    <>
      <Stat
        label="Balance"
        value={usd(account.balance)}
        note={notEnforced ? NOT_ENFORCED_NOTE : undefined}
      />
      <Stat label="Spending now" value={perHour(account.currentSpendPerHour)} />
      <Stat
        label="Spend limit"
        value={perHour(account.spendLimit)}
        note={notEnforced ? NOT_ENFORCED_SHORT : undefined}
      />
    </>
  )
}

function Stat({ label, value, note }: { label: string; value: string; note?: string | undefined }) {
  return (
    <div className="stat">
      <span className="stat-label">{label}</span>
      <span className="stat-value">{value}</span>
      {note ? <span className="hint stat-note">{note}</span> : null}
    </div>
  )
}
