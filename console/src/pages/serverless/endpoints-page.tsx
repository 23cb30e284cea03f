import { Link } from 'wouter'
import { ok } from '../../api/client'
import { jobApi } from '../../api/job-api'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { cpuOf } from '../../components/format'
import { Page } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/** The account's serverless endpoints with their queue and workers. */
export function EndpointsPage() {
  const { api, raw } = useSession()
  const endpoints = useResource(
    async (signal) => {
      const { endpoints: list } = await ok(api.GET('/v2/serverless', { signal }))
      return Promise.all(
        list.map(async (endpoint) => ({
          endpoint,
          health: await jobApi.health(raw, endpoint.id).catch(() => undefined),
        })),
      )
    },
    [api, raw],
    { refreshMs: 5000 },
  )
  return (
    <Page
      title="Serverless endpoints"
      actions={
        <Link href="/serverless/new" className="button primary">
          New endpoint
        </Link>
      }
    >
      <ListView
        resource={endpoints}
        what="endpoints"
        empty={
          <EmptyState title="No serverless endpoint yet.">
            <Link href="/serverless/new">Create an endpoint</Link>: jobs sent to it are queued and
            run by workers that the platform starts and stops by itself.
          </EmptyState>
        }
      >
        {(rows) => (
          <DataTable
            columns={['Name', 'Runs', 'Compute', 'Workers (min–max)', 'In queue', 'Workers ready']}
          >
            {rows.map(({ endpoint, health }) => (
              <tr key={endpoint.id}>
                <td>
                  <Link href={`/serverless/${endpoint.id}`}>{endpoint.name}</Link>
                  <div className="muted mono">{endpoint.id}</div>
                </td>
                <td className="mono">
                  {endpoint.templateId ? `template ${endpoint.templateId}` : endpoint.image}
                </td>
                <td>
                  {endpoint.gpu
                    ? `${endpoint.gpu.count} GPU · ${endpoint.gpu.pools.join(', ')}`
                    : endpoint.cpu?.map(cpuOf).join(', ')}
                </td>
                <td>
                  {endpoint.workers.min}–{endpoint.workers.max}
                </td>
                <td>{health ? health.jobs.inQueue : '—'}</td>
                <td>
                  {health
                    ? (health.workers.ready ?? health.workers.idle + health.workers.running)
                    : '—'}
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </ListView>
    </Page>
  )
}
