import { DataTable } from './data-table'

export interface QuotaLine {
  limit: number | null
  used: number
}

export type Quotas = Record<'gpus' | 'pods' | 'workers' | 'volumeGb', QuotaLine>

const LABELS: Array<[keyof Quotas, string]> = [
  ['gpus', 'GPUs (pods and serverless workers)'],
  ['pods', 'Pods (not terminated)'],
  ['workers', 'Serverless workers launched'],
  ['volumeGb', 'Network volumes (GB)'],
]

/** An account's quotas set by the admin and its use of them (docs/billing.md, "Quotas"). */
export function QuotaTable({ quotas }: { quotas: Quotas }) {
  return (
    <DataTable columns={['Quota', 'Used', 'Limit']} className="quota-table">
      {LABELS.map(([key, label]) => {
        const { limit, used } = quotas[key]
        return (
          <tr key={key}>
            <th scope="row">{label}</th>
            <td>{used}</td>
            <td>{limit === null ? 'no quota' : limit}</td>
          </tr>
        )
      })}
    </DataTable>
  )
}
