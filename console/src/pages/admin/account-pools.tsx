import { useState } from 'react'
import { ok } from '../../api/client'
import { ActionForm } from '../../components/action-form'
import { ErrorMessage } from '../../components/error-message'
import { TextField } from '../../components/form-fields'
import { Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useAction } from '../../hooks/use-action'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'

/**
 * One account's pools for the admin (docs/fleet.md, "Pools and labels"): hosts labelled
 * pool=<name> take only the pods and workers of the accounts bound to that pool.
 */
export function AccountPools({ accountId }: { accountId: string }) {
  const { api } = useSession()
  const pools = useResource(
    async (signal) =>
      ok(
        api.GET('/v2/admin/accounts/{accountId}/pools', {
          params: { path: { accountId } },
          signal,
        }),
      ),
    [api, accountId],
  )
  const [text, setText] = useState<string>()
  const save = useAction(async (current: string[]) => {
    const names = (text ?? current.join(', '))
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '')
    await ok(
      api.PUT('/v2/admin/accounts/{accountId}/pools', {
        params: { path: { accountId } },
        body: { pools: names },
      }),
    )
    setText(undefined)
    pools.reload()
  })
  return (
    <Section title={`Pools of ${accountId}`}>
      <ResourceView resource={pools} what="pools">
        {(data) => (
          <>
            <p className="muted">
              {data.pools.length > 0
                ? `Bound to ${data.pools.join(', ')}: hosts labelled pool=${data.pools[0]} take its pods and workers.`
                : 'Bound to no pool: only hosts without a pool label take its pods and workers.'}
            </p>
            <ActionForm
              className="form row"
              label="Set pools"
              onSubmit={() => void save.run(data.pools)}
            >
              <TextField
                label="Pools"
                hint="Comma-separated; empty: none."
                mono
                value={text ?? data.pools.join(', ')}
                onChange={setText}
                placeholder="team-a"
              />
              <button type="submit" className="button" disabled={save.busy}>
                Set pools
              </button>
            </ActionForm>
            <ErrorMessage error={save.error} />
          </>
        )}
      </ResourceView>
    </Section>
  )
}
