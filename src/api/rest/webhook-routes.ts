import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import {
  WEBHOOK_ERRORS,
  type WebhookDeliveryView,
} from '../../domain/serverless/webhook-delivery.js'
import type { WebhookService } from '../../domain/serverless/webhook-service.js'
import { principalOf } from '../http/authentication.js'
import { ProblemSchema } from './problem-schema.js'

const Params = Type.Object({
  id: Type.String({ minLength: 1, description: 'the endpoint id' }),
  jobId: Type.String({ minLength: 1 }),
})

const AttemptSchema = Type.Object({
  attempt: Type.Integer({ minimum: 1, description: '1, 2, 3' }),
  at: Type.String({ format: 'date-time', description: 'when the POST started' }),
  httpStatus: Type.Optional(Type.Integer({ description: 'the receiver’s answer' })),
  durationMs: Type.Optional(
    Type.Integer({ minimum: 0, description: 'with httpStatus only: how long the receiver took' }),
  ),
  error: Type.Optional(
    Type.Union(
      Object.values(WEBHOOK_ERRORS).map((error) => Type.Literal(error)),
      {
        description:
          'without httpStatus: why there was no answer, as a class only (docs/security.md "Egress policy")',
      },
    ),
  ),
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('failed')]),
})

const DeliverySchema = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  jobStatus: Type.String({ description: 'the terminal status that was notified' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  createdAt: Type.String({ format: 'date-time' }),
  nextAttemptAt: Type.Optional(Type.String({ format: 'date-time' })),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  attempts: Type.Array(AttemptSchema),
})

export const DeliveriesSchema = Type.Object({
  jobId: Type.String(),
  deliveries: Type.Array(DeliverySchema),
})

function deliveryView(delivery: WebhookDeliveryView): Static<typeof DeliverySchema> {
  return {
    id: delivery.id,
    url: delivery.url,
    jobStatus: delivery.jobStatus,
    status: delivery.status,
    createdAt: delivery.createdAt,
    ...(delivery.nextAttemptAt !== undefined ? { nextAttemptAt: delivery.nextAttemptAt } : {}),
    ...(delivery.finishedAt !== undefined ? { finishedAt: delivery.finishedAt } : {}),
    attempts: delivery.attempts,
  }
}

/** Webhook deliveries of a job, for its owner (docs/job-api.md "Webhooks"). */
export async function webhookRoutes(
  app: FastifyInstance,
  { webhooks }: { webhooks: WebhookService },
): Promise<void> {
  app.get<{ Params: Static<typeof Params> }>(
    '/serverless/:id/jobs/:jobId/webhook',
    {
      schema: {
        tags: ['Serverless'],
        operationId: 'getJobWebhookDeliveries',
        summary:
          'Webhook deliveries of a job: each attempt with its HTTP status or the class of error',
        params: Params,
        response: {
          200: DeliveriesSchema,
          401: ProblemSchema,
          403: ProblemSchema,
          404: ProblemSchema,
          429: ProblemSchema,
        },
      },
    },
    async (request) => {
      const { id, jobId } = request.params
      const deliveries = await webhooks.deliveriesOf(principalOf(request).accountId, id, jobId)
      return { jobId, deliveries: deliveries.map(deliveryView) }
    },
  )
}
