import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import {
  MAX_CREDIT_NOTE_LENGTH,
  MAX_CREDIT_USD,
  MAX_SPEND_LIMIT_USD_PER_HOUR,
  MIN_CREDIT_USD,
} from '../../domain/billing/credits.js'
import type { CreditService } from '../../domain/billing/credit-service.js'
import { principalOf } from '../http/authentication.js'
import { adminOnly } from './admin-access.js'
import { CreditEntrySchema, CreditSchema } from './account-schemas.js'
import { ProblemSchema } from './problem-schema.js'

const AddCreditsBody = Type.Object(
  {
    amount: Type.Number({
      minimum: MIN_CREDIT_USD,
      maximum: MAX_CREDIT_USD,
      description: 'USD, whole cents',
    }),
    note: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_CREDIT_NOTE_LENGTH })),
  },
  { additionalProperties: false },
)

const UpdateAccountBody = Type.Object(
  { spendLimit: Type.Number({ minimum: 0, maximum: MAX_SPEND_LIMIT_USD_PER_HOUR }) },
  { additionalProperties: false },
)

const AccountParams = Type.Object({ accountId: Type.String({ minLength: 1 }) })
const errors = {
  401: ProblemSchema,
  403: ProblemSchema,
  404: ProblemSchema,
  422: ProblemSchema,
  429: ProblemSchema,
}
const tags = ['Admin']

const WHAT = 'manage credits and spend limits'

/** Admin-only account billing (docs/billing.md): credits and spend limits of any account. */
export async function adminRoutes(
  app: FastifyInstance,
  { credits }: { credits: CreditService },
): Promise<void> {
  app.get<{ Params: Static<typeof AccountParams> }>(
    '/admin/accounts/:accountId/credits',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'getAccountCredits',
        summary: 'Balance, spend limit and the latest ledger entries of an account',
        params: AccountParams,
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
      const { accountId } = request.params
      return { ...(await credits.credit(accountId)), entries: await credits.entries(accountId) }
    },
  )

  app.post<{ Params: Static<typeof AccountParams>; Body: Static<typeof AddCreditsBody> }>(
    '/admin/accounts/:accountId/credits',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'addAccountCredits',
        summary: 'Add credits to an account',
        params: AccountParams,
        body: AddCreditsBody,
        response: {
          200: Type.Intersect([CreditSchema, Type.Object({ entry: CreditEntrySchema })]),
          ...errors,
        },
      },
    },
    async (request) => {
      const by = principalOf(request).accountId
      const { credit, entry } = await credits.addCredits({
        accountId: request.params.accountId,
        usd: request.body.amount,
        note: request.body.note,
        by,
      })
      return { ...credit, entry }
    },
  )

  app.patch<{ Params: Static<typeof AccountParams>; Body: Static<typeof UpdateAccountBody> }>(
    '/admin/accounts/:accountId',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'updateAccountBilling',
        summary: "Set an account's spend limit",
        params: AccountParams,
        body: UpdateAccountBody,
        response: { 200: CreditSchema, ...errors },
      },
    },
    async (request) => {
      return credits.setSpendLimit(request.params.accountId, request.body.spendLimit)
    },
  )
}
