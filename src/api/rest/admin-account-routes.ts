import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { CreditService } from '../../domain/billing/credit-service.js'
import { MAX_NAME_LENGTH } from '../../domain/resource-names.js'
import { AccountSchema, apiKeyView, CreatedApiKeySchema } from './account-schemas.js'
import { adminOnly } from './admin-access.js'
import { ProblemSchema } from './problem-schema.js'

/** RFC 5321's longest address. */
const MAX_EMAIL_LENGTH = 254

const CreateAccountBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: MAX_EMAIL_LENGTH }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
    apiKey: Type.Optional(
      Type.Object(
        {
          name: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH })),
          permission: Type.Optional(
            Type.Union([Type.Literal('READ_WRITE'), Type.Literal('READ_ONLY')], {
              description: 'READ_WRITE (default) or READ_ONLY; a new account has no endpoint',
            }),
          ),
          expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

const errors = { 401: ProblemSchema, 403: ProblemSchema, 429: ProblemSchema }
const tags = ['Admin']
const WHAT = 'list or create accounts'

/**
 * Accounts over HTTP, for the admin (docs/api.md, "Accounts"): the list, and a new account with
 * its first API key, so that a team member can be given a key without the server's terminal.
 */
export async function adminAccountRoutes(
  app: FastifyInstance,
  { accounts, credits }: { accounts: AccountService; credits: CreditService },
): Promise<void> {
  app.get(
    '/admin/accounts',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'listAccounts',
        summary: 'Every account, oldest first, with its balance and spend limit',
        response: { 200: Type.Object({ accounts: Type.Array(AccountSchema) }), ...errors },
      },
    },
    async () => {
      const list = await accounts.listAccounts()
      return {
        accounts: await Promise.all(
          list.map(async (account) => {
            const { balance, spendLimit } = await credits.credit(account.id)
            return { ...account, balance, spendLimit }
          }),
        ),
      }
    },
  )

  app.post<{ Body: Static<typeof CreateAccountBody> }>(
    '/admin/accounts',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'createAccount',
        summary: 'Create an account (role user) and its first API key; the key is shown once',
        body: CreateAccountBody,
        response: {
          201: Type.Object({ account: AccountSchema, apiKey: CreatedApiKeySchema }),
          400: ProblemSchema,
          422: ProblemSchema,
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const { email, name, apiKey } = request.body
      const created = await accounts.createAccountWithKey({
        email,
        ...(name !== undefined ? { name } : {}),
        key: {
          name: apiKey?.name ?? 'first key',
          permission: apiKey?.permission ?? 'READ_WRITE',
          expiresAt: apiKey?.expiresAt ?? null,
        },
      })
      const { balance, spendLimit } = await credits.credit(created.account.id)
      return reply.code(201).send({
        account: { ...created.account, email: created.user.email, balance, spendLimit },
        apiKey: { ...apiKeyView(created.key), key: created.secret },
      })
    },
  )
}
