import { Link } from 'wouter'
import { ok } from '../api/client'
import { jobApi, type EndpointHealth, type JobRequest } from '../api/job-api'
import { DataTable } from '../components/data-table'
import { EmptyState } from '../components/empty-state'
import { computeOf, perHour, when } from '../components/format'
import { Page, Section } from '../components/page'
import { ListView, ResourceView } from '../components/resource-view'
import { SpendStats } from '../components/spend-stats'
import { StatusBadge } from '../components/status-badge'
import { useResource } from '../hooks/use-resource'
import { useSession } from '../session/session'

const REFRESH_MS = 5000
/** Result retention (docs/serverless-queue.md): /run jobs 30 minutes, /runsync jobs 1 minute. */
const NO_JOB_RESULTS =
  'No job results to show: none ran, or their results expired (kept 30 minutes after a /run job ends, 1 minute after /runsync).'

/** Balance and spend, running pods, endpoints with their queue and workers, recent jobs. */
export function DashboardPage() {
  const { api, raw, account, refreshAccount } = useSession()
  const pods = useResource(
    async (signal) => {
      void refreshAccount()
      return (
        await ok(
          api.GET('/v2/pods', {
            params: { query: { status: ['PROVISIONING', 'STARTING', 'RUNNING'] } },
            signal,
          }),
        )
      ).pods
    },
    [api],
    { refreshMs: REFRESH_MS },
  )
  const endpoints = useResource(
    async (signal) => {
      const { endpoints: list } = await ok(api.GET('/v2/serverless', { signal }))
      const rows = await Promise.all(
        list.map(async (endpoint) => {
          const [health, requests] = await Promise.all([
            jobApi.health(raw, endpoint.id).catch(() => undefined),
            jobApi.requests(raw, endpoint.id, 5).catch(() => undefined),
          ])
          return { endpoint, health, requests: requests?.requests ?? [] }
        }),
      )
      return rows
    },
    [api, raw],
    { refreshMs: REFRESH_MS },
  )

  return (
    <Page title="Dashboard">
      <div className="stats" aria-label="Account">
        <SpendStats account={account} />
      </div>

      <Section
        title="Running pods"
        actions={
          <Link href="/pods/new" className="button">
            Deploy a pod
          </Link>
        }
      >
        <ListView
          resource={pods}
          what="pods"
          empty={
            <EmptyState title="No pod is running.">
              <Link href="/pods/new">Deploy a pod</Link> from a GPU or CPU of the catalog.
            </EmptyState>
          }
        >
          {(list) => (
            <DataTable columns={['Pod', 'Status', 'Compute', 'Cost']}>
              {list.map((pod) => (
                <tr key={pod.id}>
                  <td>
                    <Link href={`/pods/${pod.id}`}>{pod.name}</Link>
                  </td>
                  <td>
                    <StatusBadge status={pod.status} />
                  </td>
                  <td>{computeOf(pod)}</td>
                  <td>{perHour(pod.cost)}</td>
                </tr>
              ))}
            </DataTable>
          )}
        </ListView>
      </Section>

      <Section
        title="Endpoints"
        actions={
          <Link href="/serverless/new" className="button">
            New endpoint
          </Link>
        }
      >
        <ListView
          resource={endpoints}
          what="endpoints"
          empty={
            <EmptyState title="No serverless endpoint yet.">
              <Link href="/serverless/new">Create an endpoint</Link> and its workers start when jobs
              come.
            </EmptyState>
          }
        >
          {(rows) => (
            <DataTable
              columns={['Endpoint', 'In queue', 'In progress', 'Workers ready', 'Workers starting']}
            >
              {rows.map(({ endpoint, health }) => (
                <tr key={endpoint.id}>
                  <td>
                    <Link href={`/serverless/${endpoint.id}`}>{endpoint.name}</Link>
                  </td>
                  <HealthCells health={health} />
                </tr>
              ))}
            </DataTable>
          )}
        </ListView>
      </Section>

      <Section title="Recent jobs">
        <ResourceView resource={endpoints} what="jobs">
          {(rows) => <RecentJobs rows={rows} />}
        </ResourceView>
      </Section>
    </Page>
  )
}

function HealthCells({ health }: { health: EndpointHealth | undefined }) {
  if (!health) return <td colSpan={4}>health unavailable</td>
  const ready = health.workers.ready ?? health.workers.idle + health.workers.running
  return (
    <>
      <td>{health.jobs.inQueue}</td>
      <td>{health.jobs.inProgress}</td>
      <td>{ready}</td>
      <td>{health.workers.initializing ?? 0}</td>
    </>
  )
}

function RecentJobs({
  rows,
}: {
  rows: Array<{ endpoint: { id: string; name: string }; requests: JobRequest[] }>
}) {
  const jobs = rows
    .flatMap(({ endpoint, requests }) => requests.map((job) => ({ endpoint, job })))
    .sort((a, b) => (a.job.createdAt < b.job.createdAt ? 1 : -1))
    .slice(0, 10)
  // Finished jobs are deleted after their retention, and the job API keeps no count of the
  // deleted ones (/health counts the stored jobs): an empty list cannot tell "none ran" from
  // "their results expired", so it says both.
  if (jobs.length === 0) return <EmptyState title={NO_JOB_RESULTS} />
  return (
    <DataTable columns={['Job', 'Endpoint', 'Status', 'Submitted', 'Run time']}>
      {jobs.map(({ endpoint, job }) => (
        <tr key={job.id}>
          <td className="mono">{job.id}</td>
          <td>
            <Link href={`/serverless/${endpoint.id}`}>{endpoint.name}</Link>
          </td>
          <td>
            <StatusBadge status={job.status} />
          </td>
          <td>{when(job.createdAt)}</td>
          <td>{job.executionTime} ms</td>
        </tr>
      ))}
    </DataTable>
  )
}
