import { AppError } from '../../shared/app-error.js'
import type { EndpointService } from './endpoint-service.js'
import type { JobQueue } from './ports.js'
import {
  deliveryView,
  type WebhookDeliveryRepo,
  type WebhookDeliveryView,
} from './webhook-delivery.js'

export interface WebhookServiceDeps {
  endpoints: Pick<EndpointService, 'get'>
  queue: Pick<JobQueue, 'get'>
  deliveries: Pick<WebhookDeliveryRepo, 'forJob'>
}

/** What the job's owner may read about its webhook deliveries (docs/job-api.md "Webhooks"). */
export class WebhookService {
  constructor(private readonly deps: WebhookServiceDeps) {}

  /**
   * The job's deliveries, oldest first. 404 when the endpoint is not the account's; 404 when
   * nothing is recorded for the job and the job itself is unknown (or gone); an empty list for
   * a known job that has no delivery (yet, or no `webhook`). A delivery outlives its job: it
   * carries its own payload and stays readable for WEBHOOK_RECORD_RETENTION_MS once finished.
   * Attempts show what `attemptView` allows: no detail that would make webhooks a probe of the
   * operator's network.
   */
  async deliveriesOf(
    accountId: string,
    endpointId: string,
    jobId: string,
  ): Promise<WebhookDeliveryView[]> {
    await this.deps.endpoints.get(accountId, endpointId)
    const deliveries = await this.deps.deliveries.forJob(accountId, endpointId, jobId)
    if (deliveries.length === 0) {
      const job = await this.deps.queue.get(endpointId, jobId)
      if (job === undefined || job.accountId !== accountId) {
        throw new AppError('NOT_FOUND', `job ${jobId} not found (unknown, expired or deleted)`)
      }
    }
    return deliveries.map(deliveryView)
  }
}
