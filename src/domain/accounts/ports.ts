import type { Account, ApiKey, NewApiKeyRecord, User, UserSettings } from './account.js'

export interface AccountRepo {
  create(account: Account, user: User): Promise<void>
  count(): Promise<number>
  findById(id: string): Promise<Account | undefined>
  findAdmin(): Promise<Account | undefined>
  findUserByEmail(email: string): Promise<User | undefined>
  list(): Promise<Array<Account & { email: string }>>
  primaryUser(accountId: string): Promise<User | undefined>
  /** The user's settings; every field null when the user is unknown or never set one. */
  userSettings(userId: string): Promise<UserSettings>
  saveUserSettings(userId: string, settings: UserSettings): Promise<void>
}

export interface ApiKeyRepo {
  insert(key: NewApiKeyRecord): Promise<void>
  findByHash(keyHash: string): Promise<ApiKey | undefined>
  findById(id: string): Promise<ApiKey | undefined>
  listByAccount(accountId: string): Promise<ApiKey[]>
  listAll(): Promise<ApiKey[]>
  revoke(id: string, at: string): Promise<boolean>
  touch(id: string, at: string): Promise<void>
}
