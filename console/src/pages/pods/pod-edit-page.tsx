import { useState } from 'react'
import { Link, useLocation, useParams } from 'wouter'
import { ok } from '../../api/client'
import type { Pod } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import {
  ContainerFields,
  containerSpecOf,
  type ContainerSpec,
} from '../../components/container-fields'
import { ErrorMessage } from '../../components/error-message'
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

const LABELS: Record<keyof ContainerSpec, string> = {
  name: 'Name',
  image: 'Image',
  args: 'Command',
  disk: 'Container disk (GB)',
  ports: 'Ports',
}

function PodEditForm({ pod }: { pod: Pod }) {
  const { api } = useSession()
  const [, navigate] = useLocation()
  const [spec, setSpec] = useState(containerSpecOf(pod))
  const [env, setEnv] = useState(rowsOf(pod.env))
  const save = useAction(async () => {
    const { name, image, args, disk, ports } = spec
    await ok(
      api.PATCH('/v2/pods/{id}', {
        params: { path: { id: pod.id } },
        body: { name, image, args, disk, ports: portsOf(ports), env: envOf(env) },
      }),
    )
    navigate(`/pods/${pod.id}`)
  })
  return (
    <ActionForm label="Edit pod" onSubmit={() => void save.run()}>
      <p className="hint">
        Changing anything but the name restarts a running pod and empties its container disk.
      </p>
      <ContainerFields labels={LABELS} spec={spec} onChange={setSpec} />
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
    </ActionForm>
  )
}
