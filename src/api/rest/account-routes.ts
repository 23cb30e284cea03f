import { MAX_NAME_LENGTH } from '../../domain/resource-names.js'
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { ApiKey } from '../../domain/accounts/account.js'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { CreditService } from '../../domain/billing/credit-service.js'
import { AppError } from '../../shared/app-error.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

const Permission = Type.Union([
  Type.Literal('READ_WRITE'),
  Type.Literal('READ_ONLY'),
  Type.Literal('RESTRICTED'),
])

export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'the first characters of the key, to recognise it' }),
  permission: Permission,
  endpoints: Type.Array(Type.String(), {
    description: 'for RESTRICTED keys: the endpoints it may use',
  }),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})

export const CreatedApiKeySchema = Type.Intersect([
  ApiKeySchema,
  Type.Object({
    key: Type.String({ description: 'the API key itself; returned only here, once' }),
  }),
])

const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }),
    permission: Type.Optional(Permission),
    endpoints: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 100 })),
    expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: false },
)

export const AccountSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Type.String(),
  role: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  balance: Type.Number({ description: 'credit balance, USD' }),
  spendLimit: Type.Number({ description: 'USD per hour' }),
})

const errors = { 401: ProblemSchema, 403: ProblemSchema, 429: ProblemSchema }

function apiKeyView(key: ApiKey): Static<typeof ApiKeySchema> {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    permission: key.permission,
    endpoints: key.endpointIds,
    createdAt: key.createdAt,
    expiresAt: key.expiresAt,
    revokedAt: key.revokedAt,
    lastUsedAt: key.lastUsedAt,
  }
}

/** The caller's own account and its API keys (keys are shown once, at creation). */
export async function accountRoutes(
  app: FastifyInstance,
  { accounts, credits }: { accounts: AccountService; credits: CreditService },
): Promise<void> {
  app.get(
    '/account',
    {
      schema: {
        tags: ['Account'],
        operationId: 'getAccount',
        summary: 'The account of the key',
        response: { 200: AccountSchema, ...errors },
      },
    },
    async (request) => {
      const { accountId } = principalOf(request)
      const account = await accounts.findAccount(accountId)
      const user = await accounts.primaryUser(accountId)
      if (!account || !user) throw new AppError('NOT_FOUND', 'account not found')
      const { balance, spendLimit } = await credits.credit(accountId)
      return { ...account, email: user.email, balance, spendLimit }
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
        operationId: 'listSshKeys',
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
        operationId: 'replaceSshKeys',
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
