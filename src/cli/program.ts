import { Command, InvalidArgumentError, Option } from 'commander'
import { clientFrom, withClientOptions } from './client-options.js'
import { formatTable } from './format-table.js'
import { addBillingCommands } from './billing-commands.js'
import { addDevCommand, type DevDeps } from './dev-command.js'
import { addEndpointsCommands } from './endpoints-commands.js'
import { addClustersCommands } from './clusters-commands.js'
import { addJobsCommands } from './jobs-commands.js'
import { addHostsCommands } from './hosts-commands.js'
import { addModelsCommands } from './models-commands.js'
import { addPodsCommands } from './pods-commands.js'
import { addRegistriesCommands } from './registries-commands.js'
import { addTemplatesCommands } from './templates-commands.js'
import { addVolumesCommands } from './volumes-commands.js'
import { parseExpiry } from './parse-expiry.js'

/** Flags that feed the configuration layers (flag > env > file > defaults). */
export interface ConfigFlags {
  config?: string
  host?: string
  port?: string
  dataDir?: string
  storeUrl?: string
  fleet?: string
  driver?: string
  logLevel?: string
}

export interface KeyView {
  id: string
  accountId: string
  name: string
  prefix: string
  permission: string
  endpointIds: string[]
  createdAt: string
  expiresAt: string | null
  revokedAt: string | null
  lastUsedAt: string | null
}

export interface AccountView {
  id: string
  name: string
  role: string
  email: string
  createdAt: string
}

export interface CreditView {
  accountId: string
  balance: number
  spendLimit: number
}

export interface CreditEntryView {
  id: string
  amount: number
  kind: string
  note: string
  createdBy: string | null
  createdAt: string
}

/** What the store-backed commands need; main.ts provides it over a migrated store. */
export interface StoreCommands {
  createKey(input: {
    account?: string
    name: string
    permission: 'READ_WRITE' | 'READ_ONLY' | 'RESTRICTED'
    endpointIds: string[]
    expiresAt: string | null
  }): Promise<{ key: KeyView; secret: string }>
  listKeys(account?: string): Promise<KeyView[]>
  revokeKey(id: string): Promise<KeyView>
  createAccount(input: { email: string; name?: string }): Promise<AccountView>
  listAccounts(): Promise<AccountView[]>
  addCredits(input: {
    account: string
    amount: number
    note?: string
  }): Promise<CreditView & { entry: CreditEntryView }>
  showCredits(account: string): Promise<CreditView & { entries: CreditEntryView[] }>
  setSpendLimit(account: string, usdPerHour: number): Promise<CreditView>
}

export interface CliDeps extends DevDeps {
  serve(flags: ConfigFlags): Promise<void>
  progress(text: string): void
  sleep(ms: number): Promise<void>
  migrate(flags: ConfigFlags): Promise<{ applied: string[]; storeUrl: string }>
  withStore<T>(flags: ConfigFlags, use: (commands: StoreCommands) => Promise<T>): Promise<T>
  print(text: string): void
  now(): Date
}

const permissionFlags = {
  'read-write': 'READ_WRITE',
  'read-only': 'READ_ONLY',
  restricted: 'RESTRICTED',
} as const

function addConfigOptions(command: Command, withServer: boolean): Command {
  command
    .option('-c, --config <file>', 'configuration file (default ./podyard.yaml if present)')
    .option('--data-dir <dir>', 'data directory (default ./.podyard)')
    .option(
      '--store-url <url>',
      'sqlite:<file> or postgres://... (default sqlite:<data-dir>/podyard.db)',
    )
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent')
  if (withServer) {
    command
      .option('--host <host>', 'listen address (default 127.0.0.1)')
      .option('-p, --port <port>', 'listen port (default 8080)')
      .option('--fleet <fleet>', 'demo, none, or a fleet file (default demo)')
      .option(
        '--driver <driver>',
        "the local host's runtime driver: process or docker (default process)",
      )
  }
  return command
}

/** A USD amount argument: a plain decimal number such as 25 or 12.50. */
function parseUsd(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value.trim())) {
    throw new InvalidArgumentError(`"${value}" is not an amount in USD, e.g. 25 or 12.50`)
  }
  return Number(value)
}

function usd(amount: number): string {
  return `${amount < 0 ? '-' : ''}$${Math.abs(amount).toFixed(2)}`
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2)
}

function keyRows(keys: KeyView[]) {
  return formatTable(
    [
      'ID',
      'PREFIX',
      'NAME',
      'ACCOUNT',
      'PERMISSION',
      'ENDPOINTS',
      'EXPIRES',
      'REVOKED',
      'LAST USED',
    ],
    keys.map((k) => [
      k.id,
      `${k.prefix}…`,
      k.name,
      k.accountId,
      k.permission,
      k.endpointIds.join(',') || null,
      k.expiresAt,
      k.revokedAt,
      k.lastUsedAt,
    ]),
  )
}

export function buildProgram(deps: CliDeps): Command {
  const program = new Command('podyard')
    .description('Self-hostable GPU and CPU compute platform that speaks RunPod’s API')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => deps.print(s.trimEnd()) })

  addConfigOptions(
    program.command('serve').description('run the platform (API, GraphQL, job API)'),
    true,
  ).action((flags: ConfigFlags) => deps.serve(flags))

  addDevCommand(program, deps)

  addConfigOptions(
    program.command('migrate').description('apply pending database migrations'),
    false,
  )
    .option('--json', 'print JSON')
    .action(async (flags: ConfigFlags & { json?: boolean }) => {
      const result = await deps.migrate(flags)
      if (flags.json) return deps.print(json(result))
      deps.print(
        result.applied.length === 0
          ? `${result.storeUrl}: already up to date`
          : `${result.storeUrl}: applied ${result.applied.join(', ')}`,
      )
    })

  const keys = program.command('keys').description('manage API keys (works directly on the store)')
  addConfigOptions(
    keys.command('create').description('create an API key; the key is shown once'),
    false,
  )
    .option('--account <id-or-email>', 'account to own the key (default: the admin account)')
    .option('--name <name>', 'a name to recognise the key by', 'api key')
    .addOption(
      new Option('--permission <level>', 'read-write, read-only or restricted')
        .choices(Object.keys(permissionFlags))
        .default('read-write'),
    )
    .option(
      '--endpoint <id>',
      'serverless endpoint a restricted key may use (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option('--expires <when>', 'expiry: a duration (30d, 12h, 90m) or an ISO date-time')
    .option('--json', 'print JSON')
    .action(
      async (
        flags: ConfigFlags & {
          account?: string
          name: string
          permission: keyof typeof permissionFlags
          endpoint: string[]
          expires?: string
          json?: boolean
        },
      ) => {
        let expiresAt: string | null = null
        if (flags.expires) {
          try {
            expiresAt = parseExpiry(flags.expires, deps.now())
          } catch (error) {
            throw new InvalidArgumentError((error as Error).message)
          }
        }
        const { key, secret } = await deps.withStore(flags, (store) =>
          store.createKey({
            ...(flags.account ? { account: flags.account } : {}),
            name: flags.name,
            permission: permissionFlags[flags.permission],
            endpointIds: flags.endpoint,
            expiresAt,
          }),
        )
        if (flags.json) return deps.print(json({ ...key, key: secret }))
        deps.print(
          [
            `Created API key ${key.id} (${key.permission}) for account ${key.accountId}.`,
            'This is the only time the key is shown; store it now:',
            '',
            `  ${secret}`,
            '',
          ].join('\n'),
        )
      },
    )

  addConfigOptions(keys.command('list').description('list API keys (never their secrets)'), false)
    .option('--account <id-or-email>', 'only keys of this account')
    .option('--json', 'print JSON')
    .action(async (flags: ConfigFlags & { account?: string; json?: boolean }) => {
      const list = await deps.withStore(flags, (store) => store.listKeys(flags.account))
      deps.print(flags.json ? json(list) : keyRows(list))
    })

  addConfigOptions(
    keys.command('revoke').description('revoke an API key').argument('<key-id>'),
    false,
  )
    .option('--json', 'print JSON')
    .action(async (id: string, flags: ConfigFlags & { json?: boolean }) => {
      const key = await deps.withStore(flags, (store) => store.revokeKey(id))
      deps.print(flags.json ? json(key) : `Revoked ${key.id} at ${key.revokedAt}.`)
    })

  const accounts = program
    .command('accounts')
    .description('manage accounts (works directly on the store)')
  addConfigOptions(accounts.command('create').description('create an account with one user'), false)
    .requiredOption('--email <email>', 'email of the account’s user')
    .option('--name <name>', 'account name (default: the email)')
    .option('--json', 'print JSON')
    .action(async (flags: ConfigFlags & { email: string; name?: string; json?: boolean }) => {
      const account = await deps.withStore(flags, (store) =>
        store.createAccount({ email: flags.email, ...(flags.name ? { name: flags.name } : {}) }),
      )
      deps.print(flags.json ? json(account) : `Created account ${account.id} (${account.email}).`)
    })

  addConfigOptions(accounts.command('list').description('list accounts'), false)
    .option('--json', 'print JSON')
    .action(async (flags: ConfigFlags & { json?: boolean }) => {
      const list = await deps.withStore(flags, (store) => store.listAccounts())
      deps.print(
        flags.json
          ? json(list)
          : formatTable(
              ['ID', 'NAME', 'EMAIL', 'ROLE', 'CREATED'],
              list.map((a) => [a.id, a.name, a.email, a.role, a.createdAt]),
            ),
      )
    })

  const credits = program
    .command('credits')
    .description('credit balances and spend limits (works directly on the store)')
  addConfigOptions(credits.command('add').description('add credits (USD) to an account'), false)
    .argument('<account>', 'account id or user email')
    .argument('<amount>', 'USD, whole cents (e.g. 25 or 12.50)', parseUsd)
    .option('--note <text>', 'why the credits were added (kept in the ledger)')
    .option('--json', 'print JSON')
    .action(
      async (
        account: string,
        amount: number,
        flags: ConfigFlags & { note?: string; json?: boolean },
      ) => {
        const added = await deps.withStore(flags, (store) =>
          store.addCredits({ account, amount, ...(flags.note ? { note: flags.note } : {}) }),
        )
        deps.print(
          flags.json
            ? json(added)
            : `Added ${usd(added.entry.amount)} to ${added.accountId}; balance ${usd(added.balance)}.`,
        )
      },
    )

  addConfigOptions(
    credits.command('show').description("an account's balance, spend limit and ledger"),
    false,
  )
    .argument('<account>', 'account id or user email')
    .option('--json', 'print JSON')
    .action(async (account: string, flags: ConfigFlags & { json?: boolean }) => {
      const shown = await deps.withStore(flags, (store) => store.showCredits(account))
      deps.print(
        flags.json
          ? json(shown)
          : [
              `Account ${shown.accountId}: balance ${usd(shown.balance)}, spend limit ${usd(shown.spendLimit)}/h`,
              formatTable(
                ['WHEN', 'AMOUNT', 'KIND', 'NOTE'],
                shown.entries.map((e) => [e.createdAt, usd(e.amount), e.kind, e.note]),
              ),
            ].join('\n'),
      )
    })

  addConfigOptions(
    credits
      .command('set-spend-limit')
      .description('the most (USD per hour) the account’s running resources may cost'),
    false,
  )
    .argument('<account>', 'account id or user email')
    .argument('<usd-per-hour>', 'USD per hour', parseUsd)
    .option('--json', 'print JSON')
    .action(async (account: string, limit: number, flags: ConfigFlags & { json?: boolean }) => {
      const set = await deps.withStore(flags, (store) => store.setSpendLimit(account, limit))
      deps.print(
        flags.json ? json(set) : `Spend limit of ${set.accountId}: ${usd(set.spendLimit)}/h.`,
      )
    })

  const catalog = program
    .command('catalog')
    .description('what can be rented, from a running server')
  const catalogOptions = withClientOptions

  catalogOptions(catalog.command('gpus').description('GPU types with prices and stock')).action(
    async (flags: { url?: string; apiKey?: string; json?: boolean }) => {
      const { gpus } = await clientFrom(flags).get<{ gpus: Array<Record<string, any>> }>(
        '/v2/catalog/gpus',
      )
      if (flags.json) return deps.print(json(gpus))
      deps.print(
        formatTable(
          ['ID', 'NAME', 'MEMORY', 'SECURE $/H', 'COMMUNITY $/H', 'MAX', 'STOCK'],
          gpus.map((g) => [
            g.id,
            g.name,
            `${g.memory} GB`,
            g.price.secure,
            g.price.community,
            Math.max(g.maxCount.secure, g.maxCount.community),
            g.availability,
          ]),
        ),
      )
    },
  )

  catalogOptions(catalog.command('cpus').description('CPU flavors with prices and stock')).action(
    async (flags: { url?: string; apiKey?: string; json?: boolean }) => {
      const { cpus } = await clientFrom(flags).get<{ cpus: Array<Record<string, any>> }>(
        '/v2/catalog/cpus',
      )
      if (flags.json) return deps.print(json(cpus))
      deps.print(
        formatTable(
          ['ID', 'NAME', 'GROUP', 'VCPUS', 'RAM GB/VCPU', '$/VCPU/H', 'STOCK'],
          cpus.map((c) => [
            c.id,
            c.name,
            c.group,
            (c.vcpuCounts as number[]).join(','),
            c.ramGbPerVcpu,
            c.price.securePerVcpu,
            c.availability,
          ]),
        ),
      )
    },
  )

  catalogOptions(catalog.command('datacenters').description('data centers')).action(
    async (flags: { url?: string; apiKey?: string; json?: boolean }) => {
      const { dataCenters } = await clientFrom(flags).get<{
        dataCenters: Array<Record<string, any>>
      }>('/v2/catalog/datacenters')
      if (flags.json) return deps.print(json(dataCenters))
      deps.print(
        formatTable(
          ['ID', 'NAME', 'REGION', 'GLOBAL NETWORK', 'VOLUME TYPES'],
          dataCenters.map((d) => [
            d.id,
            d.name,
            d.region,
            d.globalNetwork,
            (d.networkVolumeTypes as string[]).join(','),
          ]),
        ),
      )
    },
  )

  addPodsCommands(program, deps)
  addClustersCommands(program, deps)
  addTemplatesCommands(program, deps)
  addVolumesCommands(program, deps)
  addRegistriesCommands(program, deps)
  addEndpointsCommands(program, deps)
  addJobsCommands(program, deps)
  addBillingCommands(program, deps)
  addModelsCommands(program, deps)
  addHostsCommands(program, deps)

  return program
}
