import { MAX_NAME_LENGTH } from '../../domain/resource-names.js'
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { CreditService } from '../../domain/billing/credit-service.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import {
  AccountSchema,
  ApiKeySchema,
  apiKeyView,
  CreatedApiKeySchema,
  CreditEntrySchema,
  CreditSchema,
  Permission,
} from './account-schemas.js'
import { ProblemSchema } from './problem-schema.js'
import { QuotaReportSchema } from './quota-routes.js'
import type { QuotaService } from '../../domain/quotas/quota-service.js'

const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }),
    permission: Type.Optional(Permission),
    endpoints: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 100 })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
)

const AccountWithSpendSchema = Type.Intersect([
  AccountSchema,
  Type.Object({
    currentSpendPerHour: Type.Optional(
      Type.Number({
        description:
          "USD per hour: the account's pods and launched serverless workers (GraphQL currentSpendPerHr)",
      }),
    ),
    quotas: Type.Optional(QuotaReportSchema),
    balanceEnforced: Type.Optional(
      Type.Boolean({
        description:
          'whether a used-up balance stops anything (config billing.enforce); false: the balance is only counted',
      }),
    ),
  }),
])

const errors = { 401: ProblemSchema, 403: ProblemSchema, 429: ProblemSchema }

export interface AccountRouteDeps {
  accounts: AccountService
  credits: CreditService
  /** The account's current spend (docs/billing.md); absent, `currentSpendPerHour` is left out. */
  spend?: {
    currentSpendPerHour(accountId: string): Promise<number>
    /** Config `billing.enforce`: whether a used-up balance stops anything. */
    readonly enforced: boolean
  }
  /** The admin's quotas (docs/billing.md, "Quotas"); absent, `quotas` is left out. */
  quotas?: QuotaService
}

/** The caller's own account and its API keys (keys are shown once, at creation). */
export async function accountRoutes(
  app: FastifyInstance,
  { accounts, credits, spend, quotas }: AccountRouteDeps,
): Promise<void> {
  app.get(
    '/account',
    {
      schema: {
        tags: ['Account'],
        operationId: 'getAccount',
        summary: 'The account of the key',
        response: { 200: AccountWithSpendSchema, ...errors },
      },
    },
    async (request) => {
      const { accountId } = principalOf(request)
      const account = await accounts.findAccount(accountId)
      const user = await accounts.primaryUser(accountId)
      if (!account || !user) throw new AppError('NOT_FOUND', 'account not found')
      const { balance, spendLimit } = await credits.credit(accountId)
      return {
        ...account,
        email: user.email,
        balance,
        spendLimit,
        ...(spend
          ? {
              currentSpendPerHour: await spend.currentSpendPerHour(accountId),
              balanceEnforced: spend.enforced,
            }
          : {}),
        ...(quotas ? { quotas: await quotas.report(accountId) } : {}),
      }
    },
  )

  app.get(
    '/account/credits',
    {
      schema: {
        tags: ['Account'],
        operationId: 'getOwnCredits',
        summary: 'Balance, spend limit and the latest ledger entries of your account',
        response: {
          200: Type.Intersect([
            CreditSchema,
            Type.Object({ entries: Type.Array(CreditEntrySchema) }),
          ]),
          ...errors,
        },
      },
    },
    async (request) => {
      const { accountId } = principalOf(request)
      return { ...(await credits.credit(accountId)), entries: await credits.entries(accountId) }
    },
  )

  const SshKeys = Type.Object(
    { keys: Type.Array(Type.String({ minLength: 1, maxLength: 16_384 }), { maxItems: 100 }) },
    { additionalProperties: false },
  )
  app.get(
    '/account/ssh-keys',
    {
      schema: {
        tags: ['Account'],
        operationId: 'getSshKeys',
        summary: 'SSH public keys put into every pod as PUBLIC_KEY',
        response: { 200: SshKeys, ...errors },
      },
    },
    async (request) => ({ keys: await accounts.sshKeys(principalOf(request).accountId) }),
  )

  app.put<{ Body: Static<typeof SshKeys> }>(
    '/account/ssh-keys',
    {
      schema: {
        tags: ['Account'],
        operationId: 'updateSshKeys',
        summary: 'Replace the set of SSH public keys',
        body: SshKeys,
        response: { 200: SshKeys, 400: ProblemSchema, 422: ProblemSchema, ...errors },
      },
    },
    async (request) => ({
      keys: await accounts.replaceSshKeys(principalOf(request).accountId, request.body.keys),
    }),
  )

  app.get(
    '/account/api-keys',
    {
      schema: {
        tags: ['Account'],
        operationId: 'listApiKeys',
        summary: "The account's API keys (never their secrets)",
        response: { 200: Type.Object({ apiKeys: Type.Array(ApiKeySchema) }), ...errors },
      },
    },
    async (request) => ({
      apiKeys: (await accounts.listApiKeys(principalOf(request).accountId)).map(apiKeyView),
    }),
  )

  app.post<{ Body: Static<typeof CreateApiKeyBody> }>(
    '/account/api-keys',
    {
      schema: {
        tags: ['Account'],
        operationId: 'createApiKey',
        summary: 'Create an API key; its secret is shown once',
        body: CreateApiKeyBody,
        response: { 201: CreatedApiKeySchema, 400: ProblemSchema, 422: ProblemSchema, ...errors },
      },
    },
    async (request, reply) => {
      const { key, secret } = await accounts.createApiKey({
        accountId: principalOf(request).accountId,
        name: request.body.name,
        permission: request.body.permission ?? 'READ_WRITE',
        endpointIds: request.body.endpoints ?? [],
        expiresAt: request.body.expiresAt ?? null,
      })
      return reply.code(201).send({ ...apiKeyView(key), key: secret })
    },
  )

  app.delete<{ Params: { id: string } }>(
    '/account/api-keys/:id',
    {
      schema: {
        tags: ['Account'],
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        params: Type.Object({ id: Type.String({ minLength: 1 }) }),
        response: { 204: Type.Null(), 404: ProblemSchema, ...errors },
      },
    },
    async (request, reply) => {
      await accounts.revokeApiKey(request.params.id, principalOf(request).accountId)
      return reply.code(204).send()
    },
  )
}
