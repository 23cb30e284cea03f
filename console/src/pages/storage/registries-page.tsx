import { useState } from 'react'
import { ok } from '../../api/client'
import { ActionForm } from '../../components/action-form'
import { ConfirmRowAction } from '../../components/confirm-button'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { TextField } from '../../components/form-fields'
import { Page, Section } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/** Registry credentials for private images. Passwords go in and never come back out. */
export function RegistriesPage() {
  const { api } = useSession()
  const registries = useResource(
    async (signal) => (await ok(api.GET('/v2/registries', { signal }))).registries,
    [api],
  )
  const remove = useAction(async (id: string) => {
    await ok(api.DELETE('/v2/registries/{id}', { params: { path: { id } } }))
    registries.reload()
  })
  const [name, setName] = useState('')
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const create = useAction(async () => {
    await ok(api.POST('/v2/registries', { body: { name: name.trim(), username, password } }))
    setName('')
    setUsername('')
    setPassword('')
    registries.reload()
  })
  return (
    <Page title="Registries">
      <Section title="Credentials">
        <ErrorMessage error={remove.error} />
        <ListView
          resource={registries}
          what="registries"
          empty={<EmptyState title="No registry credential yet." />}
        >
          {(list) => (
            <DataTable columns={['Name', 'ID (give it as a pod’s registry)']} actions>
              {list.map((registry) => (
                <tr key={registry.id}>
                  <td>{registry.name}</td>
                  <td className="mono">{registry.id}</td>
                  <td>
                    <ConfirmRowAction label="Delete" item={registry} action={remove} />
                  </td>
                </tr>
              ))}
            </DataTable>
          )}
        </ListView>
      </Section>
      <Section title="Add credentials">
        <ActionForm label="Add registry credentials" onSubmit={() => void create.run()}>
          <div className="row">
            <TextField label="Registry name" required value={name} onChange={setName} />
            <TextField
              label="Username"
              required
              autoComplete="off"
              value={username}
              onChange={setUsername}
            />
            <TextField
              label="Password"
              hint="Stored encrypted; never shown again."
              type="password"
              required
              autoComplete="new-password"
              value={password}
              onChange={setPassword}
            />
          </div>
          <ErrorMessage error={create.error} />
          <button type="submit" className="button primary" disabled={create.busy}>
            Add credentials
          </button>
        </ActionForm>
      </Section>
    </Page>
  )
}
