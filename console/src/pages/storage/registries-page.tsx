import { useState, type FormEvent } from 'react'
import { ok } from '../../api/client'
import { ConfirmButton } from '../../components/confirm-button'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
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
        <ResourceView resource={registries} what="registries">
          {(list) =>
            list.length === 0 ? (
              <EmptyState title="No registry credential yet." />
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">ID (give it as a pod’s registry)</th>
                    <th scope="col">
                      <span className="offscreen">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((registry) => (
                    <tr key={registry.id}>
                      <td>{registry.name}</td>
                      <td className="mono">{registry.id}</td>
                      <td>
                        <ConfirmButton
                          label="Delete"
                          subject={registry.name}
                          busy={remove.busy}
                          onConfirm={() => void remove.run(registry.id)}
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
      <Section title="Add credentials">
        <form
          className="form"
          aria-label="Add registry credentials"
          onSubmit={(event: FormEvent) => {
            event.preventDefault()
            void create.run()
          }}
        >
          <div className="row">
            <Field label="Registry name">
              {(props) => (
                <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />
              )}
            </Field>
            <Field label="Username">
              {(props) => (
                <input
                  {...props}
                  required
                  autoComplete="off"
                  value={username}
                  onChange={(e) => setUsername(e.target.value)}
                />
              )}
            </Field>
            <Field label="Password" hint="Stored encrypted; never shown again.">
              {(props) => (
                <input
                  {...props}
                  type="password"
                  required
                  autoComplete="new-password"
                  value={password}
                  onChange={(e) => setPassword(e.target.value)}
                />
              )}
            </Field>
          </div>
          <ErrorMessage error={create.error} />
          <button type="submit" className="button primary" disabled={create.busy}>
            Add credentials
          </button>
        </form>
      </Section>
    </Page>
  )
}
