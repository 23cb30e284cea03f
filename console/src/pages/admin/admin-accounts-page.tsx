import { useState, type FormEvent } from 'react'
import { ok } from '../../api/client'
import type { Answer } from '../../api/types'
import { CopyButton } from '../../components/copy-button'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { perHour, usd, when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { AccountBilling } from './account-billing'

type Created = Answer<'/v2/admin/accounts', 'post', 201>

/** Every account; a new one with its first key; credits and spend limits of each. */
export function AdminAccountsPage() {
  const { api } = useSession()
  const accounts = useResource(
    async (signal) => (await ok(api.GET('/v2/admin/accounts', { signal }))).accounts,
    [api],
  )
  const [created, setCreated] = useState<Created>()
  const [open, setOpen] = useState<string>()
  return (
    <Page title="Accounts">
      {created ? (
        <div className="card new-key" role="region" aria-labelledby="new-account-title">
          <h2 id="new-account-title">Account {created.account.email} created</h2>
          <p>Give this key to its owner now: it is shown only this once.</p>
          <p>
            <input
              className="mono wide"
              readOnly
              aria-label="First API key"
              value={created.apiKey.key}
              onFocus={(e) => e.target.select()}
            />{' '}
            <CopyButton text={created.apiKey.key} label="Copy key" />
          </p>
          <button type="button" className="button" onClick={() => setCreated(undefined)}>
            Done
          </button>
        </div>
      ) : null}
      <Section title="Accounts">
        <ResourceView resource={accounts} what="accounts">
          {(list) =>
            list.length === 0 ? (
              <EmptyState title="No account." />
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Email</th>
                    <th scope="col">Name</th>
                    <th scope="col">Role</th>
                    <th scope="col">Balance</th>
                    <th scope="col">Spend limit</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span className="offscreen">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((account) => (
                    <tr key={account.id}>
                      <td>{account.email}</td>
                      <td>{account.name}</td>
                      <td>{account.role}</td>
                      <td>{usd(account.balance)}</td>
                      <td>{perHour(account.spendLimit)}</td>
                      <td>{when(account.createdAt)}</td>
                      <td>
                        <button
                          type="button"
                          className="button small"
                          aria-expanded={open === account.id}
                          onClick={() => setOpen(open === account.id ? undefined : account.id)}
                        >
                          Credits <span className="offscreen">of {account.email}</span>
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </ResourceView>
        {open ? <AccountBilling accountId={open} onChange={accounts.reload} /> : null}
      </Section>
      <Section title="New account">
        <CreateAccountForm
          onCreated={(result) => {
            setCreated(result)
            accounts.reload()
          }}
        />
      </Section>
    </Page>
  )
}

function CreateAccountForm({ onCreated }: { onCreated: (created: Created) => void }) {
  const { api } = useSession()
  const [email, setEmail] = useState('')
  const [name, setName] = useState('')
  const [keyName, setKeyName] = useState('first key')
  const [permission, setPermission] = useState<'READ_WRITE' | 'READ_ONLY'>('READ_WRITE')
  const create = useAction(async () => {
    const created = await ok(
      api.POST('/v2/admin/accounts', {
        body: {
          email: email.trim(),
          ...(name.trim() ? { name: name.trim() } : {}),
          apiKey: { name: keyName.trim() || 'first key', permission },
        },
      }),
    )
    setEmail('')
    setName('')
    onCreated(created)
  })
  return (
    <form
      className="form"
      aria-label="New account"
      onSubmit={(event: FormEvent) => {
        event.preventDefault()
        void create.run()
      }}
    >
      <div className="row">
        <Field label="Email">
          {(props) => (
            <input
              {...props}
              type="email"
              required
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
          )}
        </Field>
        <Field label="Account name" hint="Empty: the email.">
          {(props) => <input {...props} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
      </div>
      <div className="row">
        <Field label="First key name">
          {(props) => (
            <input {...props} value={keyName} onChange={(e) => setKeyName(e.target.value)} />
          )}
        </Field>
        <Field label="First key permission">
          {(props) => (
            <select
              {...props}
              value={permission}
              onChange={(e) => setPermission(e.target.value as 'READ_WRITE' | 'READ_ONLY')}
            >
              <option value="READ_WRITE">read and write</option>
              <option value="READ_ONLY">read only</option>
            </select>
          )}
        </Field>
      </div>
      <ErrorMessage error={create.error} />
      <button type="submit" className="button primary" disabled={create.busy}>
        Create account
      </button>
    </form>
  )
}
