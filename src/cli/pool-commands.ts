import type { Command } from 'commander'
import { clientFrom, withClientOptions, type ClientFlags } from './client-options.js'

interface PoolsJson {
  accountId: string
  pools: string[]
}

/**
 * `podyard pools show | bind | unbind <account>`: which pools an account is bound to (admin
 * key; docs/fleet.md, "Pools and labels"). A host labelled pool=X takes only the pods and
 * workers of the accounts bound to X.
 */
export function addPoolCommands(program: Command, deps: { print(text: string): void }): void {
  const pools = program
    .command('pools')
    .description("bind accounts to pools: a host labelled pool=X takes only X's accounts (admin)")
  const path = (account: string) => `/v2/admin/accounts/${encodeURIComponent(account)}/pools`
  const show = (answer: PoolsJson, flags: ClientFlags) =>
    deps.print(
      flags.json
        ? JSON.stringify(answer, null, 2)
        : `account ${answer.accountId}: ${answer.pools.length > 0 ? `pools ${answer.pools.join(', ')}` : 'no pool (only hosts in no pool take its pods)'}`,
    )

  withClientOptions(
    pools
      .command('show')
      .description('the pools an account is bound to')
      .argument('<account>', 'account id or email'),
  ).action(async (account: string, flags: ClientFlags) => {
    show(await clientFrom(flags).get<PoolsJson>(path(account)), flags)
  })

  for (const verb of ['bind', 'unbind'] as const) {
    withClientOptions(
      pools
        .command(verb)
        .description(
          verb === 'bind'
            ? 'bind an account to pools (it keeps the others)'
            : 'unbind an account from pools (it keeps the others)',
        )
        .argument('<account>', 'account id or email')
        .argument('<pool...>', 'pool names, as in the hosts label pool=<name>'),
    ).action(async (account: string, names: string[], flags: ClientFlags) => {
      const client = clientFrom(flags)
      const current = (await client.get<PoolsJson>(path(account))).pools
      const next =
        verb === 'bind'
          ? [...new Set([...current, ...names])]
          : current.filter((p) => !names.includes(p))
      show(await client.request<PoolsJson>('PUT', path(account), { pools: next }), flags)
    })
  }
}
