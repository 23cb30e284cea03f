import { useState } from 'react'
import { ok } from '../../api/client'
import { ActionForm } from '../../components/action-form'
import { ConfirmRowAction } from '../../components/confirm-button'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { TextField } from '../../components/form-fields'
import { when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/**
 * Account secrets, referred to from env values as {{ RUNPOD_SECRET_<name> }}. A value goes in
 * and never comes back out: the form forgets it once the secret is stored.
 */
export function SecretsPage() {
  const { api } = useSession()
  const secrets = useResource(
    async (signal) => await ok(api.GET('/v2/account/secrets', { signal })),
    [api],
  )
  const remove = useAction(async (id: string) => {
    await ok(api.DELETE('/v2/account/secrets/{id}', { params: { path: { id } } }))
    secrets.reload()
  })
  const [name, setName] = useState('')
  const [value, setValue] = useState('')
  const [description, setDescription] = useState('')
  const create = useAction(async () => {
    const trimmed = description.trim()
    await ok(
      api.POST('/v2/account/secrets', {
        body: { name: name.trim(), value, ...(trimmed ? { description: trimmed } : {}) },
      }),
    )
    setName('')
    setValue('')
    setDescription('')
    secrets.reload()
  })
  return (
    <Page title="Secrets">
      <Section title="Your secrets">
        <p className="muted">
          Refer to a secret from a pod’s or endpoint’s environment variable as{' '}
          <code>{'{{ RUNPOD_SECRET_<name> }}'}</code>; it is put into the workload when it starts.
          Values are stored encrypted and never shown.
        </p>
        <ErrorMessage error={remove.error} />
        <ListView resource={secrets} what="secrets" empty={<EmptyState title="No secret yet." />}>
          {(list) => (
            <DataTable columns={['Name', 'Reference', 'Description', 'Created']} actions>
              {list.map((secret) => (
                <tr key={secret.id}>
                  <td>{secret.name}</td>
                  <td className="mono">{`{{ RUNPOD_SECRET_${secret.name} }}`}</td>
                  <td>{secret.description ?? ''}</td>
                  <td>{when(secret.createdAt)}</td>
                  <td>
                    <ConfirmRowAction label="Delete" item={secret} action={remove} />
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </ListView>
      </Section>
      <Section title="Add a secret">
        <ActionForm label="Add a secret" onSubmit={() => void create.run()}>
          <div className="row">
            <TextField
              label="Secret name"
              hint="Letters, digits and _ (up to 64)."
              required
              mono
              autoComplete="off"
              value={name}
              onChange={setName}
            />
            <TextField
              label="Value"
              hint="Stored encrypted; never shown again."
              type="password"
              required
              autoComplete="new-password"
              value={value}
              onChange={setValue}
            />
            <TextField
              label="Description"
              autoComplete="off"
              value={description}
              onChange={setDescription}
            />
          </div>
          <ErrorMessage error={create.error} />
          <button type="submit" className="button primary" disabled={create.busy}>
            Add secret
          </button>
        </ActionForm>
      </Section>
    </Page>
  )
}
