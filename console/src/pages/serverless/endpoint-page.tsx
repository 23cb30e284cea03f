import { Link, useLocation, useParams } from 'wouter'
import { ok } from '../../api/client'
import { jobApi } from '../../api/job-api'
import type { Endpoint } from '../../api/types'
import { ConfirmButton } from '../../components/confirm-button'
import { DataTable } from '../../components/data-table'
import { ErrorMessage } from '../../components/error-message'
import { cpuOf, when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { StatusBadge } from '../../components/status-badge'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { ConnectPanel } from './connect-panel'
import { HealthPanel } from './health-panel'
import { ImageReadinessPanel } from './image-readiness-panel'
import { RunJobPanel } from './run-job-panel'
import { WorkerKeyPanel } from './worker-key-panel'
import { WorkersPanel } from './workers-panel'

/** One endpoint: health, workers and their logs, recent requests, a job runner, how to call it. */
export function EndpointPage() {
  const { id } = useParams<{ id: string }>()
  const { api } = useSession()
  const endpoint = useResource(
    async (signal) => ok(api.GET('/v2/serverless/{id}', { params: { path: { id } }, signal })),
    [api, id],
  )
  return (
    <ResourceView resource={endpoint} what="the endpoint">
      {(data) => <EndpointView endpoint={data} />}
    </ResourceView>
  )
}

function EndpointView({ endpoint }: { endpoint: Endpoint }) {
  const { api } = useSession()
  const [, navigate] = useLocation()
  const remove = useAction(async () => {
    await ok(api.DELETE('/v2/serverless/{id}', { params: { path: { id: endpoint.id } } }))
    navigate('/serverless')
  })
  return (
    <Page
      title={endpoint.name}
      actions={
        <>
          <Link href={`/serverless/${endpoint.id}/edit`} className="button">
            Edit
          </Link>
          <ConfirmButton
            label="Delete"
            confirmLabel="Yes, delete this endpoint"
            busy={remove.busy}
            onConfirm={() => void remove.run()}
          />
        </>
      }
    >
      <ErrorMessage error={remove.error} />
      <dl className="details">
        <div>
          <dt>ID</dt>
          <dd className="mono">{endpoint.id}</dd>
        </div>
        <div>
          <dt>Runs</dt>
          <dd className="mono">
            {endpoint.templateId
              ? `template ${endpoint.templateId} (${endpoint.image})`
              : endpoint.image}
          </dd>
        </div>
        <div>
          <dt>Compute</dt>
          <dd>
            {endpoint.gpu
              ? `${endpoint.gpu.count} GPU per worker from ${endpoint.gpu.pools.join(', ')}`
              : endpoint.cpu?.map(cpuOf).join(', ')}
          </dd>
        </div>
        <div>
          <dt>Workers</dt>
          <dd>
            {endpoint.workers.min} to {endpoint.workers.max}
            {endpoint.workers.idleTimeout !== undefined
              ? `, idle ${endpoint.workers.idleTimeout} s`
              : ''}
          </dd>
        </div>
        <div>
          <dt>Scaling</dt>
          <dd>
            {endpoint.scaling.type === 'QUEUE_DELAY'
              ? `queue delay ${endpoint.scaling.queueDelay} s`
              : `${endpoint.scaling.requestCount} requests per worker`}
          </dd>
        </div>
        <div>
          <dt>Version</dt>
          <dd>{endpoint.version}</dd>
        </div>
      </dl>
      <HealthPanel endpointId={endpoint.id} />
      <RunJobPanel endpointId={endpoint.id} />
      <WorkersPanel endpointId={endpoint.id} />
      <ImageReadinessPanel endpoint={endpoint} />
      <RecentRequests endpointId={endpoint.id} />
      <ConnectPanel endpointId={endpoint.id} />
      <WorkerKeyPanel endpointId={endpoint.id} />
    </Page>
  )
}

function RecentRequests({ endpointId }: { endpointId: string }) {
  const { raw } = useSession()
  const requests = useResource(() => jobApi.requests(raw, endpointId, 20), [raw, endpointId], {
    refreshMs: 3000,
  })
  return (
    <Section title="Recent requests">
      <ResourceView resource={requests} what="requests">
        {(page) =>
          page.requests.length === 0 ? (
            <p className="muted">No job has been sent to this endpoint yet.</p>
          ) : (
            <DataTable columns={['Job', 'Status', 'Submitted', 'Waited', 'Ran', 'Worker']}>
              {page.requests.map((job) => (
                <tr key={job.id}>
                  <td className="mono">{job.id}</td>
                  <td>
                    <StatusBadge status={job.status} />
                  </td>
                  <td>{when(job.createdAt)}</td>
                  <td>{job.delayTime} ms</td>
                  <td>{job.executionTime} ms</td>
                  <td className="mono">{job.workerId ?? '—'}</td>
                </tr>
              ))}
            </DataTable>
          )
        }
      </ResourceView>
    </Section>
  )
}
