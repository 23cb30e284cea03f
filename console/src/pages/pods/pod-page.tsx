import { Link, useParams } from 'wouter'
import { ok } from '../../api/client'
import { routeOf } from '../../api/raw-api'
import type { Pod } from '../../api/types'
import { duration, perHour, when } from '../../components/format'
import { LogView } from '../../components/log-view'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { StatusBadge } from '../../components/status-badge'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { PodActions } from './pod-actions'

/** One pod, live: status, runtime metrics, ports, logs and actions. */
export function PodPage() {
  const { id } = useParams<{ id: string }>()
  const { api, raw } = useSession()
  const pod = useResource(
    async (signal) => ok(api.GET('/v2/pods/{id}', { params: { path: { id } }, signal })),
    [api, id],
    { refreshMs: 2000 },
  )
  return (
    <ResourceView resource={pod} what="the pod">
      {(data) => (
        <Page
          title={data.name}
          actions={
            <Link href={`/pods/${data.id}/edit`} className="button">
              Edit
            </Link>
          }
        >
          <p className="status-line" aria-live="polite">
            Status <StatusBadge status={data.status} />
            {data.statusReason ? <span className="muted"> {data.statusReason}</span> : null}
          </p>
          <PodActions pod={data} onChange={pod.reload} />
          <Section title="Details">
            <PodDetails pod={data} />
          </Section>
          <Section title="Runtime">
            <Runtime pod={data} />
          </Section>
          <Section title="Logs">
            <LogView
              raw={raw}
              path={routeOf('/v2/pods/{id}/logs', { id: data.id })}
              title={`Logs of ${data.name}`}
              run={data.status === 'RUNNING' ? (data.startedAt ?? 'running') : 'not running'}
            />
          </Section>
        </Page>
      )}
    </ResourceView>
  )
}

function PodDetails({ pod }: { pod: Pod }) {
  const rows: Array<[string, string]> = [
    ['ID', pod.id],
    ['Image', pod.image],
    ['Command', pod.args || '(the image’s own)'],
    [
      'Compute',
      pod.gpu
        ? `${pod.gpu.count} × ${pod.gpu.id}`
        : pod.cpu
          ? `${pod.cpu.vcpuCount} vCPU, ${pod.cpu.memory} GB (${pod.cpu.id})`
          : '—',
    ],
    ['Cloud', pod.cloud],
    ['Data center', pod.dataCenterId ?? '—'],
    ['Cost', perHour(pod.cost)],
    ['Container disk', `${pod.disk} GB`],
    [
      'Volume',
      pod.mounts.persistent
        ? `${pod.mounts.persistent.size} GB at ${pod.mounts.persistent.path}`
        : pod.mounts.network?.[0]
          ? `network volume ${pod.mounts.network[0].volumeId} at ${pod.mounts.network[0].path}`
          : 'none',
    ],
    ['Ports', pod.ports.join(', ') || 'none'],
    ['Environment', Object.keys(pod.env).join(', ') || 'none'],
    ['Created', when(pod.createdAt)],
    ['Started', when(pod.startedAt)],
  ]
  return (
    <dl className="details">
      {rows.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
      {pod.ssh?.direct ? (
        <div>
          <dt>SSH</dt>
          <dd className="mono">{pod.ssh.direct.command}</dd>
        </div>
      ) : null}
    </dl>
  )
}

function Runtime({ pod }: { pod: Pod }) {
  const runtime = pod.runtime
  if (!runtime) return <p className="muted">Metrics and ports show while the pod is RUNNING.</p>
  const host = (ip: string | null) => (!ip || ip === '0.0.0.0' ? window.location.hostname : ip)
  return (
    <>
      <dl className="details">
        <div>
          <dt>Uptime</dt>
          <dd>{duration(runtime.uptime)}</dd>
        </div>
        <div>
          <dt>CPU</dt>
          <dd>
            <Meter label="CPU use" value={runtime.cpu?.util} />
          </dd>
        </div>
        <div>
          <dt>Memory</dt>
          <dd>
            <Meter label="Memory use" value={runtime.memory?.util} />
          </dd>
        </div>
        {(runtime.gpus ?? []).map((gpu, index) => (
          <div key={index}>
            <dt>GPU {index}</dt>
            <dd>
              <Meter label={`GPU ${index} use`} value={gpu.util} /> memory {gpu.memoryUtil}%
            </dd>
          </div>
        ))}
      </dl>
      <h3>Ports</h3>
      {(runtime.ports ?? []).length === 0 ? (
        <p className="muted">The pod exposes no port.</p>
      ) : (
        <ul className="ports">
          {(runtime.ports ?? []).map((port) => (
            <li key={`${port.private}/${port.type}`}>
              {port.private}/{port.type} →{' '}
              {port.public === null ? (
                'not published'
              ) : port.type === 'http' ? (
                <a
                  href={`http://${host(port.ip)}:${port.public}/`}
                  target="_blank"
                  rel="noreferrer"
                >
                  {host(port.ip)}:{port.public}
                </a>
              ) : (
                <span className="mono">
                  {host(port.ip)}:{port.public}
                </span>
              )}
            </li>
          ))}
        </ul>
      )}
    </>
  )
}

function Meter({ label, value }: { label: string; value: number | undefined }) {
  if (value === undefined) return <>—</>
  return (
    <span className="meter-wrap">
      <meter min={0} max={100} value={value} aria-label={label} /> {value}%
    </span>
  )
}
