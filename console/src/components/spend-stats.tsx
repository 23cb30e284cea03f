import type { Account } from '../api/types'
import { perHour, usd } from './format'

/** The account's balance, spend now and spend limit, as the stat tiles of a page. */
export function SpendStats({ account }: { account: Account }) {
  return (
    <>
      <Stat label="Balance" value={usd(account.balance)} />
      <Stat label="Spending now" value={perHour(account.currentSpendPerHour)} />
      <Stat label="Spend limit" value={perHour(account.spendLimit)} />
    </>
  )
}

function Stat({ label, value }: { label: string; value: string }) {
  return (
    <div className="stat">
      <span className="stat-label">{label}</span>
      <span className="stat-value">{value}</span>
    </div>
  )
}
