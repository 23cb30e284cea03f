import { useState, type FormEvent } from 'react'
import { ok } from '../../api/client'
import type { NetworkVolume } from '../../api/types'
import { ConfirmButton } from '../../components/confirm-button'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

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
        <ResourceView resource={volumes} what="network volumes">
          {(list) =>
            list.length === 0 ? (
              <EmptyState title="No network volume yet." />
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Size</th>
                    <th scope="col">Data center</th>
                    <th scope="col">
                      <span className="offscreen">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
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
                        <ConfirmButton
                          label="Delete"
                          subject={volume.name}
                          busy={remove.busy}
                          onConfirm={() => void remove.run(volume.id)}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </ResourceView>
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
    <form
      className="inline-form"
      onSubmit={(event) => {
        event.preventDefault()
        void resize.run()
      }}
    >
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
    </form>
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
    <form
      className="form"
      aria-label="New network volume"
      onSubmit={(event: FormEvent) => {
        event.preventDefault()
        void create.run()
      }}
    >
      <div className="row">
        <Field label="Volume name">
          {(props) => (
            <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <Field label="Size (GB)" hint="10 to 4096; it can grow, never shrink.">
          {(props) => (
            <input
              {...props}
              type="number"
              min={10}
              max={4096}
              value={size}
              onChange={(e) => setSize(Number(e.target.value))}
            />
          )}
        </Field>
        <Field label="Data center">
          {(props) => (
            <select
              {...props}
              value={dataCenterId}
              onChange={(e) => setDataCenterId(e.target.value)}
            >
              {dataCenters.map((dc) => (
                <option key={dc.id} value={dc.id}>
                  {dc.id} · {dc.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <ErrorMessage error={create.error} />
      <button type="submit" className="button primary" disabled={create.busy}>
        Create volume
      </button>
    </form>
  )
}
