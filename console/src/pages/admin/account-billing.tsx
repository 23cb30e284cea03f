import { useState, type FormEvent } from 'react'
import { ok } from '../../api/client'
import { ErrorMessage } from '../../components/error-message'
import { Field } from '../../components/field'
import { perHour, usd, when } from '../../components/format'
import { Section } from '../../components/page'
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
  const { api } = useSession()
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
            </p>
            <form
              className="form row"
              aria-label="Add credits"
              onSubmit={(event: FormEvent) => {
                event.preventDefault()
                void add.run()
              }}
            >
              <Field label="Credits (USD)">
                {(props) => (
                  <input
                    {...props}
                    type="number"
                    min={0.01}
                    step={0.01}
                    value={amount}
                    onChange={(e) => setAmount(Number(e.target.value))}
                  />
                )}
              </Field>
              <Field label="Note">
                {(props) => (
                  <input {...props} value={note} onChange={(e) => setNote(e.target.value)} />
                )}
              </Field>
              <button type="submit" className="button primary" disabled={add.busy}>
                Add credits
              </button>
            </form>
            <ErrorMessage error={add.error} />
            <form
              className="form row"
              aria-label="Spend limit"
              onSubmit={(event: FormEvent) => {
                event.preventDefault()
                void setSpendLimit.run(limit ?? data.spendLimit)
              }}
            >
              <Field label="Spend limit (USD per hour)">
                {(props) => (
                  <input
                    {...props}
                    type="number"
                    min={0}
                    step={0.01}
                    value={limit ?? data.spendLimit}
                    onChange={(e) => setLimit(Number(e.target.value))}
                  />
                )}
              </Field>
              <button type="submit" className="button" disabled={setSpendLimit.busy}>
                Set spend limit
              </button>
            </form>
            <ErrorMessage error={setSpendLimit.error} />
            <table>
              <caption>Latest ledger entries</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Amount</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Note</th>
                </tr>
              </thead>
              <tbody>
                {data.entries.map((entry) => (
                  <tr key={entry.id}>
                    <td>{when(entry.createdAt)}</td>
                    <td>{usd(entry.amount)}</td>
                    <td>{entry.kind}</td>
                    <td>{entry.note}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </ResourceView>
    </Section>
  )
}
