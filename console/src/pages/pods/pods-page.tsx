import { useState } from 'react'
import { Link } from 'wouter'
import { ok } from '../../api/client'
import type { PodStatus } from '../../api/types'
import { CheckOption, toggled } from '../../components/choices'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { computeOf, perHour, when } from '../../components/format'
import { Page } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { StatusBadge } from '../../components/status-badge'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

const STATUSES: PodStatus[] = [
  'PROVISIONING',
  'STARTING',
  'RUNNING',
  'EXITED',
  'ERROR',
  'TERMINATED',
]
const DEFAULT_SHOWN = STATUSES.filter((status) => status !== 'TERMINATED')

/** Every pod of the account, live, filtered by status and name. */
export function PodsPage() {
  const { api } = useSession()
  const [shown, setShown] = useState<PodStatus[]>(DEFAULT_SHOWN)
  const [search, setSearch] = useState('')
  const pods = useResource(
    async (signal) =>
      (await ok(api.GET('/v2/pods', { params: { query: { status: shown } }, signal }))).pods,
    [api, shown.join(',')],
    { refreshMs: 3000 },
  )

  return (
    <Page
      title="Pods"
      actions={
        <Link href="/pods/new" className="button primary">
          Deploy a pod
        </Link>
      }
    >
      <form
        className="filters"
        onSubmit={(event) => event.preventDefault()}
        aria-label="Filter pods"
      >
        <fieldset>
          <legend>Status</legend>
          {STATUSES.map((status) => (
            <CheckOption
              key={status}
              checked={shown.includes(status)}
              onChange={() => setShown((current) => toggled(current, status))}
            >
              {status}
            </CheckOption>
          ))}
        </fieldset>
        <div className="field inline">
          <label htmlFor="pod-search">Name contains</label>
          <input
            id="pod-search"
            type="search"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
          />
        </div>
      </form>
      <ResourceView resource={pods} what="pods">
        {(list) => {
          const matching = list.filter((pod) =>
            pod.name.toLowerCase().includes(search.toLowerCase()),
          )
          if (matching.length === 0) {
            return (
              <EmptyState
                title={
                  list.length === 0 ? 'No pods with these statuses.' : 'No pod matches the name.'
                }
              >
                <Link href="/pods/new">Deploy a pod</Link>
              </EmptyState>
            )
          }
          return (
            <DataTable
              columns={['Name', 'Status', 'Compute', 'Image', 'Data center', 'Cost', 'Created']}
            >
              {matching.map((pod) => (
                <tr key={pod.id}>
                  <td>
                    <Link href={`/pods/${pod.id}`}>{pod.name}</Link>
                    {pod.locked ? <span className="badge badge-idle">locked</span> : null}
                  </td>
                  <td>
                    <StatusBadge status={pod.status} />
                  </td>
                  <td>{computeOf(pod)}</td>
                  <td className="mono">{pod.image}</td>
                  <td>{pod.dataCenterId ?? '—'}</td>
                  <td>{perHour(pod.cost)}</td>
                  <td>{when(pod.createdAt)}</td>
                </tr>
              ))}
            </DataTable>
          )
        }}
      </ResourceView>
    </Page>
  )
}
