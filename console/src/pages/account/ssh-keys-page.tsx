import { useState, type FormEvent } from 'react'
import { ok } from '../../api/client'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/** The SSH public keys that pods created with "SSH keys" get as PUBLIC_KEY. */
export function SshKeysPage() {
  const { api } = useSession()
  const keys = useResource(
    async (signal) => (await ok(api.GET('/v2/account/ssh-keys', { signal }))).keys,
    [api],
  )
  const [added, setAdded] = useState('')
  const save = useAction(async (next: string[]) => {
    await ok(api.PUT('/v2/account/ssh-keys', { body: { keys: next } }))
    setAdded('')
    keys.reload()
  })
  const submit = (event: FormEvent) => {
    event.preventDefault()
    void save.run([...(keys.data ?? []), added.trim()])
  }
  return (
    <Page title="SSH keys">
      <Section title="Keys">
        <ResourceView resource={keys} what="SSH keys">
          {(list) =>
            list.length === 0 ? (
              <EmptyState title="No SSH key yet." />
            ) : (
              <ul className="plain-list">
                {list.map((key) => (
                  <li key={key}>
                    <span className="mono ellipsis">{key}</span>{' '}
                    <button
                      type="button"
                      className="button small"
                      aria-label={`Remove SSH key ${key.split(/\s+/)[2] ?? key.slice(0, 24)}`}
                      onClick={() => void save.run(list.filter((k) => k !== key))}
                    >
                      Remove
                    </button>
                  </li>
                ))}
              </ul>
            )
          }
        </ResourceView>
      </Section>
      <Section title="Add a key">
        <form className="form" onSubmit={submit} aria-label="Add an SSH key">
          <Field
            label="Public key"
            hint="One OpenSSH public key line, e.g. ssh-ed25519 AAAA… me@laptop"
          >
            {(props) => (
              <textarea
                {...props}
                className="mono"
                rows={3}
                required
                value={added}
                onChange={(e) => setAdded(e.target.value)}
              />
            )}
          </Field>
          <ErrorMessage error={save.error} />
          <button type="submit" className="button primary" disabled={save.busy}>
            Add key
          </button>
        </form>
      </Section>
    </Page>
  )
}
