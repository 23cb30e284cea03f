import { useState } from 'react'
import { ok } from '../../api/client'
import type { Host, HostDrain } from '../../api/types'
import { ConfirmButton } from '../../components/confirm-button'
import { EmptyState } from '../../components/empty-state'
import { DataTable } from '../../components/data-table'
import { ErrorMessage } from '../../components/error-message'
import { when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { StatusBadge } from '../../components/status-badge'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { AddHostForm } from './add-host-form'
import { HostLabelsForm, labelsText } from './host-labels'

type Change = 'cordon' | 'uncordon' | 'drain' | 'remove' | { gpuReset: number }

/**
 * The fleet's hosts for the admin (docs/fleet.md, "Host state"): whether each is UP, its
 * schedule, and cordon, uncordon and drain. A drain lists the pods it left on the host. Its
 * sampled GPUs show their use and health, and a GPU withdrawn for its health can be put back
 * (docs/gpus.md). Machines are added and removed here too, with the routes `podyard hosts add`
 * and `podyard hosts remove` use; a removal refused while pods are on the host shows why.
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
    if (action === 'remove') await ok(api.DELETE('/v2/admin/hosts/{hostId}', { params }))
    else if (action === 'drain')
      setDrained(await ok(api.POST('/v2/admin/hosts/{hostId}/drain', { params })))
    else if (typeof action === 'object')
      await ok(
        api.POST('/v2/admin/hosts/{hostId}/gpus/{index}/reset', {
          params: { path: { hostId, index: action.gpuReset } },
        }),
      )
    else if (action === 'cordon') await ok(api.POST('/v2/admin/hosts/{hostId}/cordon', { params }))
    else await ok(api.POST('/v2/admin/hosts/{hostId}/uncordon', { params }))
    hosts.reload()
  })
  return (
    <Page title="Hosts">
      {drained ? <DrainResult drained={drained} onDone={() => setDrained(undefined)} /> : null}
      <ErrorMessage error={change.error} />
      <ListView resource={hosts} what="hosts" empty={<EmptyState title="The fleet has no host." />}>
        {(list) => (
          <DataTable columns={['Host', 'State', 'Schedule', 'Hardware', 'Runtime', 'Pods']} actions>
            {list.map((host) => (
              <HostRow
                key={host.id}
                host={host}
                busy={change.busy}
                onChange={(action) => void change.run(host.id, action)}
                onLabelled={() => hosts.reload()}
              />
            ))}
          </DataTable>
        )}
      </ListView>
      <Section title="Add a host">
        <p className="muted">
          Every replica runs it within a second, without a restart (docs/fleet.md, “Adding a
          machine”).
        </p>
        <AddHostForm onAdded={() => hosts.reload()} />
      </Section>
    </Page>
  )
}

function HostRow({
  host,
  busy,
  onChange,
  onLabelled,
}: {
  host: Host
  busy: boolean
  onChange: (action: Change) => void
  onLabelled: () => void
}) {
  const cordoned = host.schedule !== 'ACTIVE'
  return (
    <tr>
      <td>
        <span className="mono">{host.id}</span>
        <div className="muted">
          {host.dataCenterId} · {host.cloud}
          {host.simulated ? ' · simulated' : ''}
        </div>
        {host.addedAtRuntime ? (
          <HostLabelsForm host={host} onSaved={onLabelled} />
        ) : Object.keys(host.labels).length > 0 ? (
          <div className="mono">{labelsText(host.labels)}</div>
        ) : null}
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
        {host.gpus.map((gpu) => (
          <div key={gpu.index} className={gpu.health === 'WITHDRAWN' ? 'warning-text' : 'muted'}>
            GPU {gpu.index}: {gpu.utilPercent ?? '-'}% use, {gpu.memoryUsedPercent ?? '-'}% memory
            {gpu.temperatureC === null ? '' : `, ${gpu.temperatureC} °C`}
            {gpu.health === 'WITHDRAWN' ? ` · WITHDRAWN: ${gpu.reason ?? ''} ` : ''}
            {gpu.warnings.length > 0 ? ` · ${gpu.warnings.join('; ')}` : ''}
            {gpu.health === 'WITHDRAWN' ? (
              <ConfirmButton
                label={`Reset GPU ${gpu.index}`}
                subject={host.id}
                busy={busy}
                onConfirm={() => onChange({ gpuReset: gpu.index })}
              />
            ) : null}
          </div>
        ))}
      </td>
      <td className="mono">{host.runtime}</td>
      <td>{host.podCount}</td>
      <td className="actions">
        <button
          type="button"
          className="button small"
          disabled={busy}
          onClick={() => onChange(cordoned ? 'uncordon' : 'cordon')}
        >
          {cordoned ? 'Uncordon' : 'Cordon'} <span className="offscreen">{host.id}</span>
        </button>
        {host.schedule !== 'DRAINING' ? (
          <ConfirmButton
            label="Drain"
            subject={host.id}
            busy={busy}
            onConfirm={() => onChange('drain')}
          />
        ) : null}
        {host.addedAtRuntime ? (
          <ConfirmButton
            label="Remove"
            subject={host.id}
            busy={busy}
            onConfirm={() => onChange('remove')}
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
