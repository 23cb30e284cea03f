import { useState, type FormEvent } from 'react'
import { Link, useLocation, useParams } from 'wouter'
import { ok } from '../../api/client'
import type { Pod } from '../../api/types'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { portsOf } from '../../components/format'
import { envOf, KeyValueEditor, rowsOf } from '../../components/key-value-editor'
import { Page } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/** Change a pod; anything but its name restarts a running pod (docs/pods.md, "Update"). */
export function PodEditPage() {
  const { id } = useParams<{ id: string }>()
  const { api } = useSession()
  const pod = useResource(
    async (signal) => ok(api.GET('/v2/pods/{id}', { params: { path: { id } }, signal })),
    [api, id],
  )
  return (
    <Page title="Edit pod">
      <ResourceView resource={pod} what="the pod">
        {(data) => <PodEditForm pod={data} />}
      </ResourceView>
    </Page>
  )
}

function PodEditForm({ pod }: { pod: Pod }) {
  const { api } = useSession()
  const [, navigate] = useLocation()
  const [name, setName] = useState(pod.name)
  const [image, setImage] = useState(pod.image)
  const [args, setArgs] = useState(pod.args)
  const [disk, setDisk] = useState(pod.disk)
  const [ports, setPorts] = useState(pod.ports.join(', '))
  const [env, setEnv] = useState(rowsOf(pod.env))
  const save = useAction(async () => {
    await ok(
      api.PATCH('/v2/pods/{id}', {
        params: { path: { id: pod.id } },
        body: { name, image, args, disk, ports: portsOf(ports), env: envOf(env) },
      }),
    )
    navigate(`/pods/${pod.id}`)
  })
  const submit = (event: FormEvent) => {
    event.preventDefault()
    void save.run()
  }
  return (
    <form className="form" onSubmit={submit} aria-label="Edit pod">
      <p className="hint">
        Changing anything but the name restarts a running pod and empties its container disk.
      </p>
      <div className="row">
        <Field label="Name">
          {(props) => (
            <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <Field label="Image">
          {(props) => (
            <input {...props} required value={image} onChange={(e) => setImage(e.target.value)} />
          )}
        </Field>
      </div>
      <Field label="Command">
        {(props) => (
          <input
            {...props}
            className="mono"
            value={args}
            onChange={(e) => setArgs(e.target.value)}
          />
        )}
      </Field>
      <div className="row">
        <Field label="Container disk (GB)">
          {(props) => (
            <input
              {...props}
              type="number"
              min={1}
              value={disk}
              onChange={(e) => setDisk(Number(e.target.value))}
            />
          )}
        </Field>
        <Field label="Ports" hint="Comma-separated port/protocol.">
          {(props) => (
            <input
              {...props}
              className="mono"
              value={ports}
              onChange={(e) => setPorts(e.target.value)}
            />
          )}
        </Field>
      </div>
      <KeyValueEditor label="Environment variables" value={env} onChange={setEnv} />
      <ErrorMessage error={save.error} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={save.busy}>
          {save.busy ? 'Saving…' : 'Save'}
        </button>
        <Link href={`/pods/${pod.id}`} className="button">
          Cancel
        </Link>
      </div>
    </form>
  )
}
