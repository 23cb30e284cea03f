import { useState } from 'react'
import { ok } from '../../api/client'
import { routeOf } from '../../api/raw-api'
import { duration } from '../../components/format'
import { LogView } from '../../components/log-view'
import { Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { StatusBadge } from '../../components/status-badge'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/** The endpoint's workers, their states and why, and the logs of the one chosen. */
export function WorkersPanel({ endpointId }: { endpointId: string }) {
  const { api, raw } = useSession()
  const [shown, setShown] = useState<string>()
  const workers = useResource(
    async (signal) =>
      ok(api.GET('/v2/serverless/{id}/workers', { params: { path: { id: endpointId } }, signal })),
    [api, endpointId],
    { refreshMs: 2000 },
  )
  return (
    <Section title="Workers">
      <ResourceView resource={workers} what="workers">
        {(data) =>
          data.workers.length === 0 ? (
            <p className="muted">
              No worker now: they start when jobs arrive (or to keep the minimum).
            </p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Worker</th>
                  <th scope="col">State</th>
                  <th scope="col">Up</th>
                  <th scope="col">Where</th>
                  <th scope="col">Why</th>
                  <th scope="col">Logs</th>
                </tr>
              </thead>
              <tbody>
                {data.workers.map((worker) => (
                  <tr key={worker.id}>
                    <td className="mono">
                      {worker.id}
                      {worker.isStale ? (
                        <span className="badge badge-idle">old version</span>
                      ) : null}
                    </td>
                    <td>
                      <StatusBadge status={worker.status} />
                    </td>
                    <td>{duration(worker.uptimeSeconds)}</td>
                    <td>
                      {[worker.gpuTypeId, worker.dataCenterId].filter(Boolean).join(' · ') || '—'}
                    </td>
                    <td>{worker.reason ?? ''}</td>
                    <td>
                      <button
                        type="button"
                        className="button small"
                        aria-pressed={shown === worker.id}
                        onClick={() => setShown(shown === worker.id ? undefined : worker.id)}
                      >
                        {shown === worker.id ? 'Hide logs' : 'Show logs'}
                        <span className="offscreen"> of worker {worker.id}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </ResourceView>
      {shown ? (
        <LogView
          raw={raw}
          path={routeOf('/v2/serverless/{id}/workers/{workerId}/logs', {
            id: endpointId,
            workerId: shown,
          })}
          title={`Logs of worker ${shown}`}
        />
      ) : null}
    </Section>
  )
}
