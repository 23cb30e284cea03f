import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { AccountService } from '../../domain/accounts/account-service.js'
import { MAX_QUOTA } from '../../domain/quotas/quota.js'
import type { QuotaService } from '../../domain/quotas/quota-service.js'
import { accountIdNamed, adminOnly } from './admin-access.js'
import { ProblemSchema } from './problem-schema.js'

const QuotaLine = (what: string) =>
  Type.Object({
    limit: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: `the most ${what} the account may hold at once; null: no quota`,
    }),
    used: Type.Number({ description: `${what} the account holds now` }),
  })

/** Each quota of an account with its limit and what the account uses of it. */
export const QuotaReportSchema = Type.Object(
  {
    gpus: QuotaLine("GPUs (its pods' and launched serverless workers')"),
    pods: QuotaLine('pods (any status but TERMINATED)'),
    workers: QuotaLine('launched serverless workers'),
    volumeGb: QuotaLine('GB of network volumes'),
  },
  { description: 'quotas set by the admin (docs/billing.md, "Quotas"); null limits are none' },
)

const Limit = Type.Optional(
  Type.Union([Type.Integer({ minimum: 0, maximum: MAX_QUOTA }), Type.Null()], {
    description: 'the new limit; null removes the quota; absent keeps it',
  }),
)

const SetQuotasBody = Type.Object(
  { gpus: Limit, pods: Limit, workers: Limit, volumeGb: Limit },
  { additionalProperties: false },
)

const AccountParams = Type.Object({
  accountId: Type.String({ minLength: 1, maxLength: 254, description: 'account id or email' }),
})

const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const tags = ['Admin']
const WHAT = 'read or set quotas'

/** The admin's quotas per account (docs/billing.md, "Quotas"). */
export async function quotaRoutes(
  app: FastifyInstance,
  { accounts, quotas }: { accounts: AccountService; quotas: QuotaService },
): Promise<void> {
  app.get<{ Params: Static<typeof AccountParams> }>(
    '/admin/accounts/:accountId/quotas',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'getAccountQuotas',
        summary: "An account's quotas and what it uses of them",
        params: AccountParams,
        response: {
          200: Type.Object({ accountId: Type.String(), quotas: QuotaReportSchema }),
          ...errors,
        },
      },
    },
    async (request) => {
      const accountId = await accountIdNamed(accounts, request.params.accountId)
      return { accountId, quotas: await quotas.report(accountId) }
    },
  )

  app.patch<{ Params: Static<typeof AccountParams>; Body: Static<typeof SetQuotasBody> }>(
    '/admin/accounts/:accountId/quotas',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'setAccountQuotas',
        summary:
          "Set an account's quotas: given limits replace, null removes one, absent ones stay",
        params: AccountParams,
        body: SetQuotasBody,
        response: {
          200: Type.Object({ accountId: Type.String(), quotas: QuotaReportSchema }),
          400: ProblemSchema,
          422: ProblemSchema,
          ...errors,
        },
      },
    },
    async (request) => {
      const accountId = await accountIdNamed(accounts, request.params.accountId)
      return { accountId, quotas: await quotas.set(accountId, request.body) }
    },
  )
}
