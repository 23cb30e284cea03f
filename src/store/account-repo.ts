import type { Kysely, Selectable } from 'kysely'
import type { Account, AccountRole, User, UserSettings } from '../domain/accounts/account.js'
import type { AccountRepo } from '../domain/accounts/ports.js'
import type { AccountsTable, Database, UsersTable } from './database-schema.js'

const toAccount = (
  row: Pick<Selectable<AccountsTable>, 'id' | 'name' | 'role' | 'created_at'>,
): Account => ({
  id: row.id,
  name: row.name,
  role: row.role as AccountRole,
  createdAt: row.created_at,
})

const toUser = (row: Selectable<UsersTable>): User => ({
  id: row.id,
  accountId: row.account_id,
  email: row.email,
  createdAt: row.created_at,
})

export class KyselyAccountRepo implements AccountRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async create(account: Account, user: User): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto('accounts')
        .values({
          id: account.id,
          name: account.name,
          role: account.role,
          created_at: account.createdAt,
        })
        .execute()
      await tx
        .insertInto('users')
        .values({
          id: user.id,
          account_id: user.accountId,
          email: user.email,
          created_at: user.createdAt,
        })
        .execute()
    })
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  async findById(id: string): Promise<Account | undefined> {
    const row = await this.db
      .selectFrom('accounts')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()
    return row && toAccount(row)
  }

  async findAdmin(): Promise<Account | undefined> {
    const row = await this.db
      .selectFrom('accounts')
      .selectAll()
      .where('role', '=', 'admin')
      .orderBy('created_at')
      .orderBy('id')
      .executeTakeFirst()
    return row && toAccount(row)
  }

  async findUserByEmail(email: string): Promise<User | undefined> {
    const row = await this.db
      .selectFrom('users')
      .selectAll()
      .where('email', '=', email)
      .executeTakeFirst()
    return row && toUser(row)
  }

  async primaryUser(accountId: string): Promise<User | undefined> {
    const row = await this.db
      .selectFrom('users')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .executeTakeFirst()
    return row && toUser(row)
  }

  async userSettings(userId: string): Promise<UserSettings> {
    const row = await this.db
      .selectFrom('users')
      .select('pub_key')
      .where('id', '=', userId)
      .executeTakeFirst()
    return { pubKey: row?.pub_key ?? null }
  }

  async saveUserSettings(userId: string, settings: UserSettings): Promise<void> {
    await this.db
      .updateTable('users')
      .set({ pub_key: settings.pubKey })
      .where('id', '=', userId)
      .execute()
  }

  async list(): Promise<Array<Account & { email: string }>> {
    const rows = await this.db
      .selectFrom('accounts')
      .innerJoin('users', 'users.account_id', 'accounts.id')
      .select([
        'accounts.id',
        'accounts.name',
        'accounts.role',
        'accounts.created_at',
        'users.email',
      ])
      .orderBy('accounts.created_at')
      .orderBy('accounts.id')
      .execute()
    const seen = new Set<string>()
    return rows
      .filter((row) => !seen.has(row.id) && seen.add(row.id))
      .map((row) => ({ ...toAccount(row), email: row.email }))
  }
}
