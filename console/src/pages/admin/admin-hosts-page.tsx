import { useState } from 'react'
import { ok } from '../../api/client'
import type { Host, HostDrain } from '../../api/types'
import { ConfirmButton } from '../../components/confirm-button'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { StatusBadge } from '../../components/status-badge'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

type Change = 'cordon' | 'uncordon' | 'drain'

/**
 * The fleet's hosts for the admin (docs/fleet.md, "Host state"): whether each is UP, its
 * schedule, and cordon, uncordon and drain. A drain lists the pods it left on the host.
 */
export function AdminHostsPage() {
  const { api } = useSession()
  const hosts = useResource(
    async (signal) => (await ok(api.GET('/v2/admin/hosts', { signal }))).hosts,
    [api],
    { refreshMs: 5000 },
  )
  const [drained, setDrained] = useState<HostDrain>()
  const change = useAction(async (hostId: string, action: Change) => {
    const params = { path: { hostId } }
    if (action === 'drain')
      setDrained(await ok(api.POST('/v2/admin/hosts/{hostId}/drain', { params })))
    else if (action === 'cordon') await ok(api.POST('/v2/admin/hosts/{hostId}/cordon', { params }))
    else await ok(api.POST('/v2/admin/hosts/{hostId}/uncordon', { params }))
    hosts.reload()
  })
  return (
    <Page title="Hosts">
      {drained ? <DrainResult drained={drained} onDone={() => setDrained(undefined)} /> : null}
      <ErrorMessage error={change.error} />
      <ResourceView resource={hosts} what="hosts">
        {(list) =>
          list.length === 0 ? (
            <EmptyState title="The fleet has no host." />
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Host</th>
                  <th scope="col">State</th>
                  <th scope="col">Schedule</th>
                  <th scope="col">Hardware</th>
                  <th scope="col">Runtime</th>
                  <th scope="col">Pods</th>
                  <th scope="col">
                    <span className="offscreen">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((host) => (
                  <HostRow
                    key={host.id}
                    host={host}
                    busy={change.busy}
                    onChange={(action) => void change.run(host.id, action)}
                  />
                ))}
              </tbody>
            </table>
          )
        }
      </ResourceView>
    </Page>
  )
}

function HostRow({
  host,
  busy,
  onChange,
}: {
  host: Host
  busy: boolean
  onChange: (action: Change) => void
}) {
  return (
    <tr>
      <td>
        <span className="mono">{host.id}</span>
        <div className="muted">
          {host.dataCenterId} · {host.cloud}
          {host.simulated ? ' · simulated' : ''}
        </div>
      </td>
      <td>
        <StatusBadge status={host.state} />
        <div className="muted">
          since {when(host.stateSince)}
          {host.stateReason ? `: ${host.stateReason}` : ''}
        </div>
        {host.warnings.map((warning) => (
          <div key={warning} className="warning-text">
            {warning}
          </div>
        ))}
      </td>
      <td>
        <StatusBadge status={host.schedule} />
        {!host.placeable && host.unplaceableReason ? (
          <div className="muted">{host.unplaceableReason}</div>
        ) : null}
      </td>
      <td>
        {host.gpu ? `${host.gpu.count} × ${host.gpu.typeId}` : 'no GPU'} · {host.vcpus} vCPU ·{' '}
        {host.memoryGb} GB
      </td>
      <td className="mono">{host.runtime}</td>
      <td>{host.podCount}</td>
      <td className="actions">
        {host.schedule === 'ACTIVE' ? (
          <button
            type="button"
            className="button small"
            disabled={busy}
            onClick={() => onChange('cordon')}
          >
            Cordon <span className="offscreen">{host.id}</span>
          </button>
        ) : (
          <button
            type="button"
            className="button small"
            disabled={busy}
            onClick={() => onChange('uncordon')}
          >
            Uncordon <span className="offscreen">{host.id}</span>
          </button>
        )}
        {host.schedule !== 'DRAINING' ? (
          <ConfirmButton
            label="Drain"
            subject={host.id}
            busy={busy}
            onConfirm={() => onChange('drain')}
          />
        ) : null}
      </td>
    </tr>
  )
}

function DrainResult({ drained, onDone }: { drained: HostDrain; onDone: () => void }) {
  return (
    <Section title={`${drained.host.id} is draining`}>
      <p>
        No new pod or worker goes there; its serverless workers are moved off.{' '}
        {drained.podsLeft.length === 0
          ? 'No pod is left on it.'
          : 'These pods stay where they are until their owners stop them:'}
      </p>
      {drained.podsLeft.length > 0 ? (
        <ul>
          {drained.podsLeft.map((pod) => (
            <li key={pod.id}>
              {pod.name} <span className="mono">{pod.id}</span> of {pod.accountId},{' '}
              <StatusBadge status={pod.status} />
            </li>
          ))}
        </ul>
      ) : null}
      <button type="button" className="button" onClick={onDone}>
        Done
      </button>
    </Section>
  )
}
