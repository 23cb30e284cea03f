import type { ReactNode } from 'react'
import type { CreditEntry } from '../api/types'
import { DataTable } from './data-table'
import { usd, when } from './format'

/** Credits and charges of an account, newest first as the API gives them. */
export function LedgerTable({ entries, caption }: { entries: CreditEntry[]; caption?: ReactNode }) {
  return (
    <DataTable columns={['When', 'Amount', 'Kind', 'Note']} caption={caption}>
      {entries.map((entry) => (
        <tr key={entry.id}>
          <td>{when(entry.createdAt)}</td>
          <td>{usd(entry.amount)}</td>
          <td>{entry.kind}</td>
          <td>{entry.note}</td>
        </tr>
      ))}
    </DataTable>
  )
}
