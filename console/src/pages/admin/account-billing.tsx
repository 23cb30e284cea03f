import { useState } from 'react'
import { ok } from '../../api/client'
import { ActionForm } from '../../components/action-form'
import { ErrorMessage } from '../../components/error-message'
import { NumberField, TextField } from '../../components/form-fields'
import { perHour, usd } from '../../components/format'
import { LedgerTable } from '../../components/ledger-table'
import { Section } from '../../components/page'
import { balanceNotEnforced, NOT_ENFORCED_NOTE } from '../../components/spend-stats'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/** One account's credits for the admin: add credits, set the spend limit, read the ledger. */
export function AccountBilling({
  accountId,
  onChange,
}: {
  accountId: string
  onChange: () => void
}) {
  const { api, account } = useSession()
  const credits = useResource(
    async (signal) =>
      ok(
        api.GET('/v2/admin/accounts/{accountId}/credits', {
          params: { path: { accountId } },
          signal,
        }),
      ),
    [api, accountId],
  )
  const [amount, setAmount] = useState(10)
  const [note, setNote] = useState('')
  const [limit, setLimit] = useState<number>()
  const add = useAction(async () => {
    await ok(
      api.POST('/v2/admin/accounts/{accountId}/credits', {
        params: { path: { accountId } },
        body: { amount, ...(note.trim() ? { note: note.trim() } : {}) },
      }),
    )
    setNote('')
    credits.reload()
    onChange()
  })
  const setSpendLimit = useAction(async (spendLimit: number) => {
    await ok(
      api.PATCH('/v2/admin/accounts/{accountId}', {
        params: { path: { accountId } },
        body: { spendLimit },
      }),
    )
    credits.reload()
    onChange()
  })
  return (
    <Section title={`Credits of ${accountId}`}>
      <ResourceView resource={credits} what="credits">
        {(data) => (
          <>
            <p>
              Balance <strong>{usd(data.balance)}</strong>, spend limit{' '}
              <strong>{perHour(data.spendLimit)}</strong>
              {/* billing.enforce is the server's, so the admin's own account tells it for all. */}
              {balanceNotEnforced(account) ? ` ${NOT_ENFORCED_NOTE}` : null}
            </p>
            <ActionForm className="form row" label="Add credits" onSubmit={() => void add.run()}>
              <NumberField
                label="Credits (USD)"
                min={0.01}
                step={0.01}
                value={amount}
                onChange={setAmount}
              />
              <TextField label="Note" value={note} onChange={setNote} />
              <button type="submit" className="button primary" disabled={add.busy}>
                Add credits
              </button>
            </ActionForm>
            <ErrorMessage error={add.error} />
            <ActionForm
              className="form row"
              label="Spend limit"
              onSubmit={() => void setSpendLimit.run(limit ?? data.spendLimit)}
            >
              <NumberField
                label="Spend limit (USD per hour)"
                min={0}
                step={0.01}
                value={limit ?? data.spendLimit}
                onChange={setLimit}
              />
              <button type="submit" className="button" disabled={setSpendLimit.busy}>
                Set spend limit
              </button>
            </ActionForm>
            <ErrorMessage error={setSpendLimit.error} />
            <LedgerTable
              entries={data.entries}
              caption={<caption>Latest ledger entries</caption>}
            />
          </>
        )}
      </ResourceView>
    </Section>
  )
}
