import type { Endpoint } from '../../api/types'
import { DataTable } from '../../components/data-table'
import { when } from '../../components/format'
import { Section } from '../../components/page'
import { StatusBadge } from '../../components/status-badge'

type HostImage = NonNullable<Endpoint['imageReadiness']>[number]

const MIB = 1024 * 1024

function progressOf(row: HostImage): string {
  if (row.bytesTotal === null || row.bytesTotal === 0) return ''
  return `${((row.bytesDone ?? 0) / MIB).toFixed(1)} / ${(row.bytesTotal / MIB).toFixed(1)} MiB`
}

/**
 * Where the endpoint's image is ready: pulled ahead of time on each Docker host that may run
 * its workers (docs/fleet.md, "Images ahead of time"), so a worker starting there pulls nothing.
 */
export function ImageReadinessPanel({ endpoint }: { endpoint: Endpoint }) {
  const rows = endpoint.imageReadiness ?? []
  return (
    <Section title="Image on hosts">
      {rows.length === 0 ? (
        <p className="muted">
          No Docker host runs this endpoint&apos;s workers: nothing is pulled ahead of time.
        </p>
      ) : (
        <DataTable columns={['Host', 'State', 'Progress', 'Since', 'Why']}>
          {rows.map((row) => (
            <tr key={row.hostId}>
              <td className="mono">{row.hostId}</td>
              <td>
                <StatusBadge status={row.state} />
              </td>
              <td>{progressOf(row)}</td>
              <td>{when(row.updatedAt)}</td>
              <td>{row.reason ?? ''}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </Section>
  )
}
