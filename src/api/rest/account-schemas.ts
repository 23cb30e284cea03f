import { Type, type Static } from '@sinclair/typebox'
import type { ApiKey } from '../../domain/accounts/account.js'

// Schemas of accounts, API keys and credits, shared by the account and admin routes.

export const Permission = Type.Union([
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

export const AccountSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Type.String(),
  role: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  balance: Type.Number({ description: 'credit balance, USD' }),
  spendLimit: Type.Number({ description: 'USD per hour' }),
})

export const CreditSchema = Type.Object({
  accountId: Type.String(),
  balance: Type.Number({ description: 'USD' }),
  spendLimit: Type.Number({ description: 'USD per hour' }),
})

export const CreditEntrySchema = Type.Object({
  id: Type.String(),
  amount: Type.Number({ description: 'USD; negative for charges' }),
  kind: Type.Union([Type.Literal('credit'), Type.Literal('charge')]),
  note: Type.String(),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
})

export function apiKeyView(key: ApiKey): Static<typeof ApiKeySchema> {
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
