import { useState } from 'react'
import { ok } from '../../api/client'
import type { Answer } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { CheckOption, toggled } from '../../components/choices'
import { ConfirmRowAction } from '../../components/confirm-button'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { SelectField, TextField } from '../../components/form-fields'
import { when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { ShownOnce } from '../../components/shown-once'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

type Permission = 'READ_WRITE' | 'READ_ONLY' | 'RESTRICTED'
type CreatedKey = Answer<'/v2/account/api-keys', 'post', 201>

/** The account's API keys: create (the key is shown once), permissions, endpoints, expiry, revoke. */
export function ApiKeysPage() {
  const { api } = useSession()
  const keys = useResource(
    async (signal) => (await ok(api.GET('/v2/account/api-keys', { signal }))).apiKeys,
    [api],
  )
  const endpoints = useResource(
    async (signal) => (await ok(api.GET('/v2/serverless', { signal }))).endpoints,
    [api],
  )
  const [created, setCreated] = useState<CreatedKey>()
  const revoke = useAction(async (id: string) => {
    await ok(api.DELETE('/v2/account/api-keys/{id}', { params: { path: { id } } }))
    keys.reload()
  })

  return (
    <Page title="API keys">
      {created ? <NewKey created={created} onDone={() => setCreated(undefined)} /> : null}
      <Section title="Create a key">
        <CreateKeyForm
          endpoints={endpoints.data ?? []}
          onCreated={(key) => {
            setCreated(key)
            keys.reload()
          }}
        />
      </Section>
      <Section title="Keys">
        <ErrorMessage error={revoke.error} />
        <ListView resource={keys} what="API keys" empty={<EmptyState title="No API key." />}>
          {(list) => (
            <DataTable
              columns={['Name', 'Key starts with', 'Permission', 'Created', 'Expires', 'Last used']}
              actions
            >
              {list.map((key) => (
                <tr key={key.id}>
                  <td>{key.name}</td>
                  <td className="mono">{key.prefix}…</td>
                  <td>
                    {key.permission}
                    {key.endpoints.length > 0 ? (
                      <div className="muted">{key.endpoints.join(', ')}</div>
                    ) : null}
                  </td>
                  <td>{when(key.createdAt)}</td>
                  <td>{key.expiresAt ? when(key.expiresAt) : 'never'}</td>
                  <td>{when(key.lastUsedAt)}</td>
                  <td>
                    {key.revokedAt ? (
                      <span className="badge badge-idle">revoked</span>
                    ) : (
                      <ConfirmRowAction label="Revoke" item={key} action={revoke} />
                    )}
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </ListView>
      </Section>
    </Page>
  )
}

/** The only time a key is shown: copy it now. */
function NewKey({ created, onDone }: { created: CreatedKey; onDone: () => void }) {
  return (
    <ShownOnce
      id="new-key-title"
      title={`Key “${created.name}” created`}
      note="Copy it now: it is shown only this once, and podyard keeps only its hash."
      label="New API key"
      secret={created.key}
      doneLabel="I have stored it"
      onDone={onDone}
    />
  )
}

function CreateKeyForm({
  endpoints,
  onCreated,
}: {
  endpoints: Array<{ id: string; name: string }>
  onCreated: (key: CreatedKey) => void
}) {
  const { api } = useSession()
  const [name, setName] = useState('')
  const [permission, setPermission] = useState<Permission>('READ_WRITE')
  const [allowed, setAllowed] = useState<string[]>([])
  const [expires, setExpires] = useState('')
  const create = useAction(async () => {
    const key = await ok(
      api.POST('/v2/account/api-keys', {
        body: {
          name: name.trim(),
          permission,
          ...(permission === 'RESTRICTED' ? { endpoints: allowed } : {}),
          ...(expires ? { expiresAt: new Date(expires).toISOString() } : {}),
        },
      }),
    )
    setName('')
    setAllowed([])
    setExpires('')
    onCreated(key)
  })
  return (
    <ActionForm label="Create an API key" onSubmit={() => void create.run()}>
      <div className="row">
        <TextField label="Key name" required value={name} onChange={setName} />
        <SelectField
          label="Permission"
          value={permission}
          onChange={(value) => setPermission(value as Permission)}
        >
          <option value="READ_WRITE">read and write</option>
          <option value="READ_ONLY">read only</option>
          <option value="RESTRICTED">restricted to endpoints</option>
        </SelectField>
        <TextField
          label="Expires"
          hint="Empty: never."
          type="datetime-local"
          value={expires}
          onChange={setExpires}
        />
      </div>
      {permission === 'RESTRICTED' ? (
        <fieldset className="options">
          <legend>Endpoints the key may call</legend>
          {endpoints.length === 0 ? <p className="muted">No endpoint yet.</p> : null}
          {endpoints.map((endpoint) => (
            <CheckOption
              key={endpoint.id}
              checked={allowed.includes(endpoint.id)}
              onChange={() => setAllowed((current) => toggled(current, endpoint.id))}
            >
              {endpoint.name} <span className="muted mono">{endpoint.id}</span>
            </CheckOption>
          ))}
        </fieldset>
      ) : null}
      <ErrorMessage error={create.error} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={create.busy}>
          Create key
        </button>
      </div>
    </ActionForm>
  )
}
