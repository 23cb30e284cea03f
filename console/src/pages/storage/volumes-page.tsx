import { useState } from 'react'
import { ok } from '../../api/client'
import type { NetworkVolume } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { ConfirmRowAction } from '../../components/confirm-button'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { NumberField, SelectField, TextField } from '../../components/form-fields'
import { Page, Section } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { DataCenterOptions } from '../../components/catalog-options'

/** Network volumes: storage in a data center that pods and workers there can mount. */
export function VolumesPage() {
  const { api } = useSession()
  const volumes = useResource(
    async (signal) => (await ok(api.GET('/v2/network-volumes', { signal }))).networkVolumes,
    [api],
  )
  const dataCenters = useResource(
    async (signal) => (await ok(api.GET('/v2/catalog/datacenters', { signal }))).dataCenters,
    [api],
  )
  const remove = useAction(async (id: string) => {
    await ok(api.DELETE('/v2/network-volumes/{id}', { params: { path: { id } } }))
    volumes.reload()
  })
  return (
    <Page title="Network volumes">
      <Section title="Volumes">
        <ErrorMessage error={remove.error} />
        <ListView
          resource={volumes}
          what="network volumes"
          empty={<EmptyState title="No network volume yet." />}
        >
          {(list) => (
            <DataTable columns={['Name', 'Size', 'Data center']} actions>
              {list.map((volume) => (
                <tr key={volume.id}>
                  <td>
                    {volume.name}
                    <div className="muted mono">{volume.id}</div>
                  </td>
                  <td>
                    <ResizeForm volume={volume} onDone={volumes.reload} />
                  </td>
                  <td>{volume.dataCenter}</td>
                  <td>
                    <ConfirmRowAction label="Delete" item={volume} action={remove} />
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </ListView>
      </Section>
      <Section title="New volume">
        <CreateVolumeForm dataCenters={dataCenters.data ?? []} onCreated={volumes.reload} />
      </Section>
    </Page>
  )
}

function ResizeForm({ volume, onDone }: { volume: NetworkVolume; onDone: () => void }) {
  const { api } = useSession()
  const [size, setSize] = useState(volume.size)
  const resize = useAction(async () => {
    await ok(
      api.PATCH('/v2/network-volumes/{id}', {
        params: { path: { id: volume.id } },
        body: { size },
      }),
    )
    onDone()
  })
  return (
    <ActionForm className="inline-form" onSubmit={() => void resize.run()}>
      <input
        type="number"
        min={volume.size}
        max={4096}
        value={size}
        aria-label={`Size of ${volume.name} in GB`}
        onChange={(e) => setSize(Number(e.target.value))}
      />{' '}
      GB{' '}
      {size !== volume.size ? (
        <button type="submit" className="button small" disabled={resize.busy}>
          Grow
        </button>
      ) : null}
      <ErrorMessage error={resize.error} />
    </ActionForm>
  )
}

function CreateVolumeForm({
  dataCenters,
  onCreated,
}: {
  dataCenters: Array<{ id: string; name: string }>
  onCreated: () => void
}) {
  const { api } = useSession()
  const [name, setName] = useState('')
  const [size, setSize] = useState(10)
  const [dataCenterId, setDataCenterId] = useState('')
  const create = useAction(async () => {
    await ok(
      api.POST('/v2/network-volumes', {
        body: { name: name.trim(), size, dataCenterId: dataCenterId || dataCenters[0]?.id },
      }),
    )
    setName('')
    onCreated()
  })
  return (
    <ActionForm label="New network volume" onSubmit={() => void create.run()}>
      <div className="row">
        <TextField label="Volume name" required value={name} onChange={setName} />
        <NumberField
          label="Size (GB)"
          hint="10 to 4096; it can grow, never shrink."
          min={10}
          max={4096}
          value={size}
          onChange={setSize}
        />
        <SelectField label="Data center" value={dataCenterId} onChange={setDataCenterId}>
          <DataCenterOptions dataCenters={dataCenters} />
        </SelectField>
      </div>
      <ErrorMessage error={create.error} />
      <button type="submit" className="button primary" disabled={create.busy}>
        Create volume
      </button>
    </ActionForm>
  )
}
