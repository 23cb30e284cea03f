import { useState } from 'react'
import { ok } from '../../api/client'
import { ActionForm } from '../../components/action-form'
import { ErrorMessage } from '../../components/error-message'
import { TextField } from '../../components/form-fields'
import { Section } from '../../components/page'
import { QuotaTable, type Quotas } from '../../components/quota-table'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

const FIELDS: Array<[keyof Quotas, string]> = [
  ['gpus', 'GPUs'],
  ['pods', 'Pods'],
  ['workers', 'Workers'],
  ['volumeGb', 'Volume GB'],
]

/** An empty field is no quota. */
const limitOf = (text: string): number | null => (text.trim() === '' ? null : Number(text))

/** One account's quotas for the admin: its use, and the limits to set (empty: no quota). */
export function AccountQuotas({ accountId }: { accountId: string }) {
  const { api } = useSession()
  const quotas = useResource(
    async (signal) =>
      ok(
        api.GET('/v2/admin/accounts/{accountId}/quotas', {
          params: { path: { accountId } },
          signal,
        }),
      ),
    [api, accountId],
  )
  const [edits, setEdits] = useState<Partial<Record<keyof Quotas, string>>>({})
  const save = useAction(async (current: Quotas) => {
    const body = Object.fromEntries(
      FIELDS.map(([key]) => [key, limitOf(edits[key] ?? String(current[key].limit ?? ''))]),
    )
    await ok(
      api.PATCH('/v2/admin/accounts/{accountId}/quotas', {
        params: { path: { accountId } },
        body,
      }),
    )
    setEdits({})
    quotas.reload()
  })
  return (
    <Section title={`Quotas of ${accountId}`}>
      <ResourceView resource={quotas} what="quotas">
        {(data) => (
          <>
            <QuotaTable quotas={data.quotas} />
            <ActionForm
              className="form row"
              label="Set quotas"
              onSubmit={() => void save.run(data.quotas)}
            >
              {FIELDS.map(([key, label]) => (
                <TextField
                  key={key}
                  type="number"
                  min={0}
                  label={label}
                  placeholder="no quota"
                  value={edits[key] ?? String(data.quotas[key].limit ?? '')}
                  onChange={(value) => setEdits({ ...edits, [key]: value })}
                />
              ))}
              <button type="submit" className="button" disabled={save.busy}>
                Set quotas
              </button>
            </ActionForm>
            <ErrorMessage error={save.error} />
          </>
        )}
      </ResourceView>
    </Section>
  )
}
