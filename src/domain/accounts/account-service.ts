import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { newId } from '../../shared/ids.js'
import type { Authentication, Principal } from './access.js'
import {
  PUB_KEY_MAX_LENGTH,
  type Account,
  type AccountRole,
  type ApiKey,
  type Permission,
  type User,
  type UserSettings,
} from './account.js'
import {
  API_KEY_MIN_LENGTH,
  API_KEY_SHAPE,
  displayPrefix,
  generateApiKey,
  hashApiKey,
} from './api-key-secret.js'
import type { AccountRepo, ApiKeyRepo } from './ports.js'

/** Writing last-used on every request would turn every read into a write; once a minute is enough. */
const LAST_USED_RESOLUTION_MS = 60_000
/**
 * How long a key that authenticated is trusted without reading the store again. Every request
 * of the job API and the worker protocol authenticates, and the two lookups cost more than the
 * job itself (bench/README.md). A key revoked through this process is forgotten at once; one
 * revoked elsewhere (another replica, `podyard keys revoke` on the store) stops working within
 * this. Expiry is checked on every request.
 */
export const AUTH_CACHE_TTL_MS = 2_000
const AUTH_CACHE_MAX_KEYS = 10_000
const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+$/

/**
 * An authorized_keys line: optional options, then a key type OpenSSH knows and base64 key
 * data (sshd(8) "AUTHORIZED_KEYS FILE FORMAT"). Blank lines and # comments are allowed.
 */
const SSH_KEY_LINE =
  /(^|\s)(ssh-(rsa|dss|ed25519)|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com|ssh-(rsa|ed25519)-cert-v01@openssh\.com)\s+[A-Za-z0-9+/]+={0,3}(\s|$)/

/** Problems of an authorized_keys text, as `body.pubKey: ...` lines (the key itself is never echoed). */
export function pubKeyProblems(text: string): string[] {
  if (text.length > PUB_KEY_MAX_LENGTH) {
    return [`body.pubKey: must be at most ${PUB_KEY_MAX_LENGTH} characters`]
  }
  return text.split(/\r?\n/).flatMap((line, index) => {
    const trimmed = line.trim()
    if (trimmed === '' || trimmed.startsWith('#') || SSH_KEY_LINE.test(trimmed)) return []
    return [
      `body.pubKey: line ${index + 1} is not an SSH public key (<type> <base64> [comment], e.g. ssh-ed25519 AAAA... me@laptop)`,
    ]
  })
}

export interface CreateApiKeyInput {
  accountId: string
  name: string
  permission: Permission
  endpointIds?: string[]
  expiresAt?: string | null
}

export interface EnsureAdminResult {
  account: Account
  /** Set only when a key was generated now: it must be shown once and is never retrievable. */
  generatedKey?: string
  createdAccount: boolean
  warnings: string[]
}

export class AccountService {
  constructor(
    private readonly accounts: AccountRepo,
    private readonly keys: ApiKeyRepo,
    private readonly clock: Clock,
  ) {}

  async createAccount(input: {
    email: string
    name?: string
    role?: AccountRole
  }): Promise<{ account: Account; user: User }> {
    const email = input.email.trim().toLowerCase()
    if (!EMAIL_SHAPE.test(email)) {
      throw new AppError('VALIDATION_FAILED', `"${input.email}" is not an email address`)
    }
    if (await this.accounts.findUserByEmail(email)) {
      throw new AppError('RULE_CONFLICT', `a user with email ${email} already exists`)
    }
    const now = this.clock.now().toISOString()
    const account: Account = {
      id: newId.account(),
      name: input.name?.trim() || email,
      role: input.role ?? 'user',
      createdAt: now,
    }
    const user: User = { id: newId.user(), accountId: account.id, email, createdAt: now }
    await this.accounts.create(account, user)
    return { account, user }
  }

  listAccounts() {
    return this.accounts.list()
  }

  /** Finds an account by id or by the email of its user. */
  async findAccount(idOrEmail: string): Promise<Account | undefined> {
    const byId = await this.accounts.findById(idOrEmail)
    if (byId) return byId
    const user = await this.accounts.findUserByEmail(idOrEmail.trim().toLowerCase())
    return user ? this.accounts.findById(user.accountId) : undefined
  }

  primaryUser(accountId: string) {
    return this.accounts.primaryUser(accountId)
  }

  /** The settings of the account's user (an account has one user today). */
  async userSettings(accountId: string): Promise<UserSettings> {
    return this.accounts.userSettings((await this.userOf(accountId)).id)
  }

  /**
   * Replaces the given settings of the account's user; absent fields are kept. `pubKey` is
   * stored as given (runpodctl reads it back and splits it into keys), so only its length is
   * bounded and its key lines checked: a typo found now is better than an SSH login that
   * fails later without saying why.
   */
  async updateUserSettings(
    accountId: string,
    patch: { pubKey?: string | null },
  ): Promise<UserSettings> {
    const user = await this.userOf(accountId)
    const current = await this.accounts.userSettings(user.id)
    if (patch.pubKey !== undefined && patch.pubKey !== null) {
      const problems = pubKeyProblems(patch.pubKey)
      if (problems.length > 0) {
        throw new AppError(
          'VALIDATION_FAILED',
          `the request failed validation: ${problems.join('; ')}`,
          { errors: problems },
        )
      }
    }
    const next: UserSettings = {
      ...current,
      ...(patch.pubKey !== undefined ? { pubKey: patch.pubKey } : {}),
    }
    await this.accounts.saveUserSettings(user.id, next)
    return next
  }

  /** The SSH public keys of `pubKey`, one per key line (REST `GET /v2/account/ssh-keys`). */
  async sshKeys(accountId: string): Promise<string[]> {
    const { pubKey } = await this.userSettings(accountId)
    return (pubKey ?? '')
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'))
  }

  /** Replaces the set of SSH keys (REST `PUT /v2/account/ssh-keys`); an empty set clears it. */
  async replaceSshKeys(accountId: string, keys: string[]): Promise<string[]> {
    const problems = keys.flatMap((key, index) =>
      // wire-compat §3.2: a key starts with its type (`^(ssh|ecdsa|sk)-`), no options.
      /^(ssh|ecdsa|sk)-/.test(key.trim()) &&
      SSH_KEY_LINE.test(key.trim()) &&
      !/[\r\n]/.test(key.trim())
        ? []
        : [
            `body.keys.${index}: is not an SSH public key (<type> <base64> [comment], e.g. ssh-ed25519 AAAA... me@laptop)`,
          ],
    )
    if (problems.length > 0) {
      throw new AppError(
        'VALIDATION_FAILED',
        `the request failed validation: ${problems.join('; ')}`,
        {
          errors: problems,
        },
      )
    }
    const unique = [...new Set(keys.map((key) => key.trim()))]
    await this.updateUserSettings(accountId, {
      pubKey: unique.length > 0 ? unique.join('\n') : null,
    })
    return unique
  }

  private async userOf(accountId: string): Promise<User> {
    const user = await this.accounts.primaryUser(accountId)
    if (!user) throw new AppError('NOT_FOUND', `account ${accountId} not found`)
    return user
  }

  findAdminAccount() {
    return this.accounts.findAdmin()
  }

  /**
   * An account, its user and its first API key (the admin's `POST /v2/admin/accounts`). The
   * key is checked before anything is written, so a refused key leaves no account behind.
   * A first key cannot be RESTRICTED: a new account has no endpoint it could name.
   */
  async createAccountWithKey(input: {
    email: string
    name?: string
    key: { name: string; permission: Exclude<Permission, 'RESTRICTED'>; expiresAt?: string | null }
  }): Promise<{ account: Account; user: User; key: ApiKey; secret: string }> {
    const { expiresAt } = input.key
    if (expiresAt && new Date(expiresAt).getTime() <= this.clock.now().getTime()) {
      throw new AppError('RULE_CONFLICT', `expiry ${expiresAt} is not in the future`)
    }
    const { account, user } = await this.createAccount({
      email: input.email,
      ...(input.name !== undefined ? { name: input.name } : {}),
    })
    const { key, secret } = await this.createApiKey({
      accountId: account.id,
      name: input.key.name,
      permission: input.key.permission,
      expiresAt: expiresAt ?? null,
    })
    return { account, user, key, secret }
  }

  async createApiKey(input: CreateApiKeyInput): Promise<{ key: ApiKey; secret: string }> {
    const endpointIds = [...new Set(input.endpointIds ?? [])]
    if (input.permission === 'RESTRICTED' && endpointIds.length === 0) {
      throw new AppError('RULE_CONFLICT', 'a RESTRICTED key must name at least one endpoint')
    }
    if (input.permission !== 'RESTRICTED' && endpointIds.length > 0) {
      throw new AppError('RULE_CONFLICT', 'endpoints can only be given for a RESTRICTED key')
    }
    const now = this.clock.now()
    if (input.expiresAt && new Date(input.expiresAt).getTime() <= now.getTime()) {
      throw new AppError('RULE_CONFLICT', `expiry ${input.expiresAt} is not in the future`)
    }
    if (!(await this.accounts.findById(input.accountId))) {
      throw new AppError('NOT_FOUND', `account ${input.accountId} not found`)
    }
    const secret = generateApiKey()
    const key = await this.storeKey(input.accountId, secret, {
      name: input.name.trim() || 'api key',
      permission: input.permission,
      endpointIds,
      expiresAt: input.expiresAt ? new Date(input.expiresAt).toISOString() : null,
    })
    return { key, secret }
  }

  private async storeKey(
    accountId: string,
    secret: string,
    fields: Pick<ApiKey, 'name' | 'permission' | 'endpointIds' | 'expiresAt'>,
  ): Promise<ApiKey> {
    const key: ApiKey = {
      id: newId.apiKey(),
      accountId,
      prefix: displayPrefix(secret),
      createdAt: this.clock.now().toISOString(),
      revokedAt: null,
      lastUsedAt: null,
      ...fields,
    }
    await this.keys.insert({ ...key, keyHash: hashApiKey(secret) })
    return key
  }

  listApiKeys(accountId?: string): Promise<ApiKey[]> {
    return accountId ? this.keys.listByAccount(accountId) : this.keys.listAll()
  }

  /** Revokes a key; with `accountId`, only a key of that account (another's reads as absent). */
  async revokeApiKey(id: string, accountId?: string): Promise<ApiKey> {
    const key = await this.keys.findById(id)
    if (!key || (accountId !== undefined && key.accountId !== accountId)) {
      throw new AppError('NOT_FOUND', `API key ${id} not found`)
    }
    if (key.revokedAt) return key
    const at = this.clock.now().toISOString()
    await this.keys.revoke(id, at)
    const hashes = new Set<string>()
    for (const [hash, cached] of this.authCache) {
      if (cached.key.id === id) {
        this.authCache.delete(hash)
        hashes.add(hash)
      }
    }
    for (const [presented, hash] of this.presentedHashes) {
      if (hashes.has(hash)) this.presentedHashes.delete(presented)
    }
    return { ...key, revokedAt: at }
  }

  /**
   * A key that authenticated within AUTH_CACHE_TTL_MS, with its account, and its expiry and last
   * use as numbers (parsing the dates on every request cost more than the rest of the check).
   */
  private readonly authCache = new Map<
    string,
    { key: ApiKey; account: Account; until: number; expiresMs: number; lastUsedMs: number }
  >()

  /**
   * The hash of each key presented lately that authenticated, by the key itself: a pure
   * function's memo (the sha256 was about 2 % of a pod read's CPU), so it cannot make anything
   * stale; what a key may do is still decided from `authCache` and the store as before. Bounded
   * as `authCache`; a key revoked here, or found revoked or unknown in the store, is dropped.
   */
  private readonly presentedHashes = new Map<string, string>()

  /** Resolves a presented key; the reason of a failure is a value, never an exception. */
  async authenticate(presented: string | undefined): Promise<Authentication> {
    if (presented === undefined || presented === '') return { ok: false, reason: 'missing' }
    if (presented.length < API_KEY_MIN_LENGTH) return { ok: false, reason: 'too-short' }
    if (!API_KEY_SHAPE.test(presented)) return { ok: false, reason: 'not-a-key' }
    const remembered = this.presentedHashes.get(presented)
    const hash = remembered ?? hashApiKey(presented)
    const now = this.clock.now().getTime()
    let found = this.authCache.get(hash)
    if (found !== undefined && found.until <= now) {
      this.authCache.delete(hash)
      found = undefined
    }
    if (found === undefined) {
      const key = await this.keys.findByHash(hash)
      const account =
        key && !key.revokedAt ? await this.accounts.findById(key.accountId) : undefined
      if (!key || !account) {
        this.presentedHashes.delete(presented)
        return { ok: false, reason: key?.revokedAt ? 'revoked' : 'unknown' }
      }
      found = {
        key,
        account,
        until: now + AUTH_CACHE_TTL_MS,
        expiresMs: key.expiresAt ? new Date(key.expiresAt).getTime() : Number.POSITIVE_INFINITY,
        lastUsedMs: key.lastUsedAt ? new Date(key.lastUsedAt).getTime() : Number.NaN,
      }
      if (this.authCache.size >= AUTH_CACHE_MAX_KEYS) {
        this.authCache.delete(this.authCache.keys().next().value!)
      }
      this.authCache.set(hash, found)
    }
    if (remembered === undefined) {
      if (this.presentedHashes.size >= AUTH_CACHE_MAX_KEYS) {
        this.presentedHashes.delete(this.presentedHashes.keys().next().value!)
      }
      this.presentedHashes.set(presented, hash)
    }
    const { account } = found
    if (found.expiresMs <= now) return { ok: false, reason: 'expired' }
    // NaN (never used) compares false: touched.
    if (!(now - found.lastUsedMs <= LAST_USED_RESOLUTION_MS)) {
      const at = new Date(now).toISOString()
      await this.keys.touch(found.key.id, at)
      found.key = { ...found.key, lastUsedAt: at }
      found.lastUsedMs = now
    }
    return {
      ok: true,
      principal: { accountId: account.id, isAdmin: account.role === 'admin', key: found.key },
    }
  }

  /**
   * On an empty store, creates the admin account. With `adminKey`, makes sure that exact key
   * belongs to the admin account (idempotent across restarts); without it, a new admin account
   * gets a generated key that the caller prints once.
   */
  async ensureAdmin(input: {
    email: string
    adminKey?: string | undefined
  }): Promise<EnsureAdminResult> {
    const warnings: string[] = []
    let account = await this.accounts.findAdmin()
    let createdAccount = false
    if (!account) {
      if ((await this.accounts.count()) > 0) {
        warnings.push('the store has accounts but no admin account; creating one')
      }
      account = (await this.createAccount({ email: input.email, name: 'admin', role: 'admin' }))
        .account
      createdAccount = true
    }
    if (input.adminKey !== undefined) {
      if (!API_KEY_SHAPE.test(input.adminKey)) {
        throw new AppError(
          'VALIDATION_FAILED',
          'PODYARD_ADMIN_KEY must be 16 to 256 characters of letters, digits and _-.~+/=',
        )
      }
      const existing = await this.keys.findByHash(hashApiKey(input.adminKey))
      if (!existing) {
        await this.storeKey(account.id, input.adminKey, {
          name: 'admin (PODYARD_ADMIN_KEY)',
          permission: 'READ_WRITE',
          endpointIds: [],
          expiresAt: null,
        })
      } else if (existing.accountId !== account.id) {
        throw new AppError(
          'RULE_CONFLICT',
          'PODYARD_ADMIN_KEY is already the key of another account',
        )
      } else if (existing.revokedAt) {
        warnings.push('PODYARD_ADMIN_KEY matches a revoked key; it stays revoked')
      }
      return { account, createdAccount, warnings }
    }
    if (createdAccount) {
      const { secret } = await this.createApiKey({
        accountId: account.id,
        name: 'admin (generated at first start)',
        permission: 'READ_WRITE',
      })
      return { account, createdAccount, generatedKey: secret, warnings }
    }
    return { account, createdAccount, warnings }
  }
}

export type { Principal }
