import { InvalidArgumentError, Option, type Command } from 'commander'
import { createdOutput } from './client-options.js'
import { addConfigOptions, type ConfigFlags } from './config-options.js'
import { formatTable } from './format-table.js'
import { formatUsd } from './format-usd.js'
import { parseExpiry } from './parse-expiry.js'

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
  /** The database opened, for people (a PostgreSQL password redacted). */
  readonly database: string
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
  /** Sets the given quotas (null removes one) and answers them all with the account's use. */
  quotas(account: string, patch: Partial<Record<QuotaName, number | null>>): Promise<QuotaView>
}

export type QuotaName = 'gpus' | 'pods' | 'workers' | 'volumeGb'

export interface QuotaView {
  accountId: string
  quotas: Record<QuotaName, { limit: number | null; used: number }>
}

/** A quota argument: a whole number, or `none` for no quota (kept as the word: commander drops null). */
function parseQuota(value: string): number | 'none' {
  if (value.trim() === 'none') return 'none'
  if (!/^\d+$/.test(value.trim())) {
    throw new InvalidArgumentError(`"${value}" is not a whole number or "none"`)
  }
  return Number(value)
}

const QUOTA_FLAGS: Array<[QuotaName, string, string]> = [
  ['gpus', '--gpus <n>', 'GPUs its pods and serverless workers may hold at once'],
  ['pods', '--pods <n>', 'pods it may have (any status but TERMINATED)'],
  ['workers', '--workers <n>', 'serverless workers it may have launched at once'],
  ['volumeGb', '--volume-gb <n>', 'GB its network volumes may add up to'],
]

export interface StoreCommandDeps {
  migrate(flags: ConfigFlags): Promise<{ applied: string[]; storeUrl: string }>
  withStore<T>(flags: ConfigFlags, use: (commands: StoreCommands) => Promise<T>): Promise<T>
  print(text: string): void
  progress(text: string): void
  now(): Date
}

const permissionFlags = {
  'read-write': 'READ_WRITE',
  'read-only': 'READ_ONLY',
  restricted: 'RESTRICTED',
} as const

/** A USD amount argument: a plain decimal number such as 25 or 12.50. */
function parseUsd(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value.trim())) {
    throw new InvalidArgumentError(`"${value}" is not an amount in USD, e.g. 25 or 12.50`)
  }
  return Number(value)
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

/**
 * `migrate`, `keys`, `accounts`, `credits`: commands that work on the store itself, with the
 * server stopped or running. They open an existing database only, unless `--init`, and say
 * which one they opened (docs/cli.md, "Store commands").
 */
export function addStoreCommands(program: Command, storeDeps: StoreCommandDeps): void {
  const deps = {
    ...storeDeps,
    withStore: <T>(flags: ConfigFlags, use: (commands: StoreCommands) => Promise<T>) =>
      storeDeps.withStore(flags, async (commands) => {
        storeDeps.progress(`database ${commands.database}`)
        return use(commands)
      }),
  }
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
    .option('-q, --quiet', 'print only the key itself (for scripts; it is shown this once)')
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
          quiet?: boolean
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
        // The key, not its id: an id alone would leave the key lost (docs/cli.md, "Scripting").
        if (flags.quiet) return deps.print(secret)
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
    .option('-q, --quiet', 'print only the id of the account')
    .option('--json', 'print JSON')
    .action(
      async (
        flags: ConfigFlags & { email: string; name?: string; json?: boolean; quiet?: boolean },
      ) => {
        const account = await deps.withStore(flags, (store) =>
          store.createAccount({ email: flags.email, ...(flags.name ? { name: flags.name } : {}) }),
        )
        deps.print(
          createdOutput(flags, account, `Created account ${account.id} (${account.email}).`),
        )
      },
    )

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

  const quota = addConfigOptions(
    accounts
      .command('quota')
      .description('show or set an account\'s quotas (docs/billing.md, "Quotas"); none: no quota'),
    false,
  ).argument('<account>', 'account id or user email')
  for (const [, flag, what] of QUOTA_FLAGS) {
    quota.option(flag, `${what}; a whole number, or none`, parseQuota)
  }
  quota
    .option('--json', 'print JSON')
    .action(
      async (
        account: string,
        flags: ConfigFlags & Partial<Record<QuotaName, number | 'none'>> & { json?: boolean },
      ) => {
        const patch = Object.fromEntries(
          QUOTA_FLAGS.flatMap(([name]) => {
            const given = flags[name]
            return given === undefined ? [] : [[name, given === 'none' ? null : given]]
          }),
        )
        const shown = await deps.withStore(flags, (store) => store.quotas(account, patch))
        deps.print(
          flags.json
            ? json(shown)
            : [
                `Quotas of ${shown.accountId}:`,
                formatTable(
                  ['QUOTA', 'LIMIT', 'USED'],
                  QUOTA_FLAGS.map(([name]) => [
                    name,
                    shown.quotas[name].limit === null ? 'none' : String(shown.quotas[name].limit),
                    String(shown.quotas[name].used),
                  ]),
                ),
              ].join('\n'),
        )
      },
    )

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
            : `Added ${formatUsd(added.entry.amount)} to ${added.accountId}; balance ${formatUsd(added.balance)}.`,
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
              `Account ${shown.accountId}: balance ${formatUsd(shown.balance)}, spend limit ${formatUsd(shown.spendLimit)}/h`,
              formatTable(
                ['WHEN', 'AMOUNT', 'KIND', 'NOTE'],
                shown.entries.map((e) => [e.createdAt, formatUsd(e.amount), e.kind, e.note]),
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
        flags.json ? json(set) : `Spend limit of ${set.accountId}: ${formatUsd(set.spendLimit)}/h.`,
      )
    })
}
