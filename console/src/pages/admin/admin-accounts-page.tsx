import { useState } from 'react'
import { ok } from '../../api/client'
import type { Answer } from '../../api/types'
import { ActionForm } from '../../components/action-form'
import { DataTable } from '../../components/data-table'
import { EmptyState } from '../../components/empty-state'
import { ErrorMessage } from '../../components/error-message'
import { SelectField, TextField } from '../../components/form-fields'
import { perHour, usd, when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ListView } from '../../components/resource-view'
import { ShownOnce } from '../../components/shown-once'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { balanceNotEnforced } from '../../components/spend-stats'
import { AccountBilling } from './account-billing'
import { AccountPools } from './account-pools'
import { AccountQuotas } from './account-quotas'

type Created = Answer<'/v2/admin/accounts', 'post', 201>

/** Every account; a new one with its first key; credits and spend limits of each. */
export function AdminAccountsPage() {
  const { api, account: own } = useSession()
  const accounts = useResource(
    async (signal) => (await ok(api.GET('/v2/admin/accounts', { signal }))).accounts,
    [api],
  )
  const [created, setCreated] = useState<Created>()
  const [open, setOpen] = useState<string>()
  return (
    <Page title="Accounts">
      {created ? (
        <ShownOnce
          id="new-account-title"
          title={`Account ${created.account.email} created`}
          note="Give this key to its owner now: it is shown only this once."
          label="First API key"
          secret={created.apiKey.key}
          doneLabel="Done"
          onDone={() => setCreated(undefined)}
        />
      ) : null}
      <Section title="Accounts">
        {balanceNotEnforced(own) ? (
          <p className="muted">
            Balances and spend limits are not enforced: this server runs every account&apos;s pods
            and jobs whatever its balance (billing.enforce is off).
          </p>
        ) : null}
        <ListView resource={accounts} what="accounts" empty={<EmptyState title="No account." />}>
          {(list) => (
            <DataTable
              columns={['Email', 'Name', 'Role', 'Balance', 'Spend limit', 'Created']}
              actions
            >
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
            </DataTable>
          )}
        </ListView>
        {open ? <AccountBilling accountId={open} onChange={accounts.reload} /> : null}
        {open ? <AccountQuotas accountId={open} /> : null}
        {open ? <AccountPools accountId={open} /> : null}
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
    <ActionForm label="New account" onSubmit={() => void create.run()}>
      <div className="row">
        <TextField label="Email" type="email" required value={email} onChange={setEmail} />
        <TextField label="Account name" hint="Empty: the email." value={name} onChange={setName} />
      </div>
      <div className="row">
        <TextField label="First key name" value={keyName} onChange={setKeyName} />
        <SelectField
          label="First key permission"
          value={permission}
          onChange={(value) => setPermission(value as 'READ_WRITE' | 'READ_ONLY')}
        >
          <option value="READ_WRITE">read and write</option>
          <option value="READ_ONLY">read only</option>
        </SelectField>
      </div>
      <ErrorMessage error={create.error} />
      <button type="submit" className="button primary" disabled={create.busy}>
        Create account
      </button>
    </ActionForm>
  )
}
