import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import {
  MAX_POOLS_PER_ACCOUNT,
  type AccountPoolService,
} from '../../domain/accounts/account-pools.js'
import type { AccountService } from '../../domain/accounts/account-service.js'
import { accountIdNamed, adminOnly } from './admin-access.js'
import { ProblemSchema } from './problem-schema.js'

const AccountParams = Type.Object({
  accountId: Type.String({ minLength: 1, maxLength: 254, description: 'account id or email' }),
})

const PoolsBody = Type.Object(
  {
    pools: Type.Array(Type.String({ minLength: 1, maxLength: 63 }), {
      maxItems: MAX_POOLS_PER_ACCOUNT,
      description: 'the pools the account is bound to, replacing the ones it had; [] unbinds all',
    }),
  },
  { additionalProperties: false },
)

const PoolsAnswer = Type.Object({
  accountId: Type.String(),
  pools: Type.Array(Type.String(), {
    description:
      'hosts labelled pool=<one of these> take its pods and workers; hosts in other pools do not',
  }),
})

const errors = { 401: ProblemSchema, 403: ProblemSchema, 404: ProblemSchema, 429: ProblemSchema }
const tags = ['Admin']
const WHAT = 'read or bind pools'

/**
 * The admin binds accounts to pools (docs/fleet.md, "Pools"): a host labelled `pool=X` takes
 * only the pods and workers of accounts bound to X. An extension of ours, not RunPod's.
 */
export async function poolRoutes(
  app: FastifyInstance,
  { accounts, pools }: { accounts: AccountService; pools: AccountPoolService },
): Promise<void> {
  app.get<{ Params: Static<typeof AccountParams> }>(
    '/admin/accounts/:accountId/pools',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'getAccountPools',
        summary: 'The pools an account is bound to',
        params: AccountParams,
        response: { 200: PoolsAnswer, ...errors },
      },
    },
    async (request) => {
      const accountId = await accountIdNamed(accounts, request.params.accountId)
      return { accountId, pools: await pools.poolsOf(accountId) }
    },
  )

  app.put<{ Params: Static<typeof AccountParams>; Body: Static<typeof PoolsBody> }>(
    '/admin/accounts/:accountId/pools',
    {
      config: adminOnly(WHAT),
      schema: {
        tags,
        operationId: 'setAccountPools',
        summary: 'Bind an account to exactly these pools ([] unbinds it from all)',
        params: AccountParams,
        body: PoolsBody,
        response: { 200: PoolsAnswer, 400: ProblemSchema, 422: ProblemSchema, ...errors },
      },
    },
    async (request) => {
      const accountId = await accountIdNamed(accounts, request.params.accountId)
      return { accountId, pools: await pools.set(accountId, request.body.pools) }
    },
  )
}
