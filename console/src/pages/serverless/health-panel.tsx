import { jobApi } from '../../api/job-api'
import { when } from '../../components/format'
import { Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/** The endpoint's `/health`: its jobs by state and its workers by state, live. */
export function HealthPanel({ endpointId }: { endpointId: string }) {
  const { raw } = useSession()
  const health = useResource(() => jobApi.health(raw, endpointId), [raw, endpointId], {
    refreshMs: 2000,
  })
  return (
    <Section title="Health">
      <ResourceView resource={health} what="health">
        {(data) => (
          <>
            <div className="stats">
              <Counter label="In queue" value={data.jobs.inQueue} />
              <Counter label="In progress" value={data.jobs.inProgress} />
              <Counter label="Completed" value={data.jobs.completed} />
              <Counter label="Failed" value={data.jobs.failed} />
              <Counter
                label="Workers ready"
                value={data.workers.ready ?? data.workers.idle + data.workers.running}
              />
              <Counter label="Workers running" value={data.workers.running} />
              <Counter label="Workers starting" value={data.workers.initializing ?? 0} />
              <Counter label="Workers unhealthy" value={data.workers.unhealthy ?? 0} />
            </div>
            {data.startBackoff ? (
              <p className="warning" role="status">
                Workers keep failing ({data.startBackoff.failures} in a row
                {data.startBackoff.lastFailure ? `: ${data.startBackoff.lastFailure.reason}` : ''});
                the next one starts at {when(data.startBackoff.nextStartAt)}.
              </p>
            ) : null}
          </>
        )}
      </ResourceView>
    </Section>
  )
}

function Counter({ label, value }: { label: string; value: number }) {
  return (
    <div className="stat">
      <span className="stat-label">{label}</span>
      <span className="stat-value">{value}</span>
    </div>
  )
}
