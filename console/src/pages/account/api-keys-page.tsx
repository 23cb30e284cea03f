import { useState, type FormEvent } from 'react'
import { ok } from '../../api/client'
import type { Answer } from '../../api/types'
import { ConfirmButton } from '../../components/confirm-button'
import { CopyButton } from '../../components/copy-button'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
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
        <ResourceView resource={keys} what="API keys">
          {(list) =>
            list.length === 0 ? (
              <EmptyState title="No API key." />
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Key starts with</th>
                    <th scope="col">Permission</th>
                    <th scope="col">Created</th>
                    <th scope="col">Expires</th>
                    <th scope="col">Last used</th>
                    <th scope="col">
                      <span className="offscreen">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
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
                          <ConfirmButton
                            label="Revoke"
                            subject={key.name}
                            busy={revoke.busy}
                            onConfirm={() => void revoke.run(key.id)}
                          />
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </ResourceView>
      </Section>
    </Page>
  )
}

/** The only time a key is shown: copy it now. */
function NewKey({ created, onDone }: { created: CreatedKey; onDone: () => void }) {
  return (
    <div className="card new-key" role="region" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Key “{created.name}” created</h2>
      <p>Copy it now: it is shown only this once, and podyard keeps only its hash.</p>
      <p>
        <input
          className="mono wide"
          readOnly
          aria-label="New API key"
          value={created.key}
          onFocus={(e) => e.target.select()}
        />{' '}
        <CopyButton text={created.key} label="Copy key" />
      </p>
      <button type="button" className="button" onClick={onDone}>
        I have stored it
      </button>
    </div>
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
  const submit = (event: FormEvent) => {
    event.preventDefault()
    void create.run()
  }
  return (
    <form className="form" onSubmit={submit} aria-label="Create an API key">
      <div className="row">
        <Field label="Key name">
          {(props) => (
            <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />
          )}
        </Field>
        <Field label="Permission">
          {(props) => (
            <select
              {...props}
              value={permission}
              onChange={(e) => setPermission(e.target.value as Permission)}
            >
              <option value="READ_WRITE">read and write</option>
              <option value="READ_ONLY">read only</option>
              <option value="RESTRICTED">restricted to endpoints</option>
            </select>
          )}
        </Field>
        <Field label="Expires" hint="Empty: never.">
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              value={expires}
              onChange={(e) => setExpires(e.target.value)}
            />
          )}
        </Field>
      </div>
      {permission === 'RESTRICTED' ? (
        <fieldset className="options">
          <legend>Endpoints the key may call</legend>
          {endpoints.length === 0 ? <p className="muted">No endpoint yet.</p> : null}
          {endpoints.map((endpoint) => (
            <label key={endpoint.id} className="check">
              <input
                type="checkbox"
                checked={allowed.includes(endpoint.id)}
                onChange={() =>
                  setAllowed((current) =>
                    current.includes(endpoint.id)
                      ? current.filter((id) => id !== endpoint.id)
                      : [...current, endpoint.id],
                  )
                }
              />
              {endpoint.name} <span className="muted mono">{endpoint.id}</span>
            </label>
          ))}
        </fieldset>
      ) : null}
      <ErrorMessage error={create.error} />
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={create.busy}>
          Create key
        </button>
      </div>
    </form>
  )
}
