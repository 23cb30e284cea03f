import { AppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import { timeOrderedUuid } from '../../shared/ids.js'
import type { TraceOrigin } from '../../shared/tracing.js'
import { decideAccess, type Principal } from '../accounts/access.js'
import { nanoToUsd } from '../billing/credits.js'
import type { UsageRecorder } from '../billing/ports.js'
import type { EndpointService } from '../serverless/endpoint-service.js'
import type { EndpointView } from '../serverless/endpoint.js'
import { jobBody, type JobBody } from '../serverless/job-body.js'
import { SYNC_JOB_ID_PREFIX, type JobView } from '../serverless/job.js'
import { parseSubmission } from '../serverless/job-requests.js'
import type { JobService } from '../serverless/job-service.js'
import type { StreamChunk } from '../serverless/job.js'
import {
  finalPriceNano,
  maxPriceNano,
  modelView,
  validateModelInput,
  type ModelDefinition,
  type ModelInput,
  type ModelView,
  type TokenUsage,
} from './model.js'
import { modelWorkerEnv } from './model-registry.js'
import type { ModelJobRecord, ModelJobRepo, ObjectStore } from './ports.js'
import type { ObjectUrlSigner } from './signed-urls.js'

/** Spec "Result retention": public image URLs work for 7 days after the image was generated. */
export const IMAGE_URL_TTL_MS = 7 * 24 * 60 * 60 * 1000
/** Container disk of a model worker, GB: the reference workers need next to nothing. */
export const MODEL_WORKER_DISK_GB = 5

export interface ModelServiceDeps {
  models: readonly ModelDefinition[]
  /** The account that owns the model endpoints (docs/public-endpoints.md, "Who owns what"). */
  ownerAccountId: string
  endpoints: EndpointService
  jobs: JobService
  credits: {
    balanceNano(accountId: string): Promise<number>
    charge(input: { accountId: string; amountNano: number; note: string }): Promise<unknown>
  }
  repo: ModelJobRepo
  objects: ObjectStore
  signer: ObjectUrlSigner
  /** The base of result URLs (`{serverless_base_url}`), known once the server listens. */
  baseUrl: () => string
  clock: Clock
  /** Records each charged job for the billing reports (`/v2/billing/endpoints`). */
  usage?: UsageRecorder
  warn?: (message: string, fields: Record<string, unknown>) => void
}

const badRequest = (problems: string[]) =>
  new AppError('MALFORMED_REQUEST', `the request is not valid: ${problems.join('; ')}`, {
    errors: problems,
  })

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const usd = (nano: number) => `$${nanoToUsd(nano).toFixed(6)}`

function jobNotFound(jobId: string): AppError {
  return new AppError('NOT_FOUND', `job ${jobId} not found (unknown, expired or deleted)`)
}

/** A model as the public endpoint list shows it (GraphQL `allAiApiPublicConfigs`). */
export interface PublicModelEntry {
  model: ModelView
  /** The model a real server answers with, else the model id. */
  modelName: string
  /** Whether its endpoint exists (a model without one answers 503). */
  live: boolean
  /** Its endpoint's creation and last change; the service's start when it has none. */
  createdAt: string
  updatedAt: string
}

/** A served model: its definition and the endpoint that runs it (or why there is none). */
interface Served {
  model: ModelDefinition
  endpointId: string | null
  unavailable: string | null
}

/**
 * Public model endpoints (docs/public-endpoints.md): the registry's models on endpoints the
 * platform owns, called by any account through the job protocol. A job is priced from its input
 * and refused (402) when the caller's balance cannot cover it; once it has COMPLETED it is
 * settled exactly once: its image stored, the caller charged.
 */
export class ModelService {
  private readonly served = new Map<string, Served>()
  private readonly byEndpoint = new Map<string, string>()
  private readonly settling = new Map<string, Promise<ModelJobRecord>>()
  private readonly startedAt: string

  constructor(private readonly deps: ModelServiceDeps) {
    this.startedAt = deps.clock.now().toISOString()
    for (const model of deps.models) {
      this.served.set(model.id, { model, endpointId: null, unavailable: 'not started yet' })
    }
  }

  get ownerAccountId(): string {
    return this.deps.ownerAccountId
  }

  list(): ModelView[] {
    return [...this.served.values()].map((s) => modelView(s.model))
  }

  ids(): string[] {
    return [...this.served.keys()]
  }

  async publicConfigs(): Promise<PublicModelEntry[]> {
    const entries: PublicModelEntry[] = []
    for (const { model, endpointId } of this.served.values()) {
      const endpoint = endpointId === null ? undefined : await this.endpoint(endpointId)
      entries.push({
        model: modelView(model),
        modelName: model.server?.model ?? model.id,
        live: endpoint !== undefined,
        createdAt: endpoint?.createdAt ?? this.startedAt,
        updatedAt: endpoint?.updatedAt ?? this.startedAt,
      })
    }
    return entries
  }

  /** Whether the endpoint is one of the model endpoints (its workers get podyard's build). */
  isModelEndpoint(endpointId: string): boolean {
    return this.byEndpoint.has(endpointId)
  }

  /**
   * Makes the owner's endpoints match the registry: one per model (named by the model id),
   * created or updated; endpoints of models no longer in the registry are deleted. A model whose
   * endpoint cannot be made is listed but answers 503 with the reason.
   */
  async syncEndpoints(): Promise<void> {
    const owner = this.deps.ownerAccountId
    const existing = new Map((await this.deps.endpoints.list(owner)).map((e) => [e.name, e]))
    for (const served of this.served.values()) {
      const { model } = served
      const input = {
        name: model.id,
        image: model.worker.image,
        args: model.worker.args,
        disk: MODEL_WORKER_DISK_GB,
        env: modelWorkerEnv(model),
        cpu: [model.worker.cpu],
        workers: model.worker.workers,
        scaling: { type: 'REQUEST_COUNT' as const, requestCount: 1 },
        timeout: model.worker.timeoutMs,
      }
      try {
        const current = existing.get(model.id)
        const endpoint = current
          ? await this.deps.endpoints.update(owner, current.id, input)
          : await this.deps.endpoints.create(owner, input)
        served.endpointId = endpoint.id
        served.unavailable = null
        this.byEndpoint.set(endpoint.id, model.id)
      } catch (error) {
        served.unavailable = (error as Error).message
        this.deps.warn?.('a public model has no endpoint', {
          modelId: model.id,
          reason: served.unavailable,
        })
      }
      existing.delete(model.id)
    }
    for (const stale of existing.values()) {
      await this.deps.endpoints.delete(owner, stale.id)
    }
  }

  private servedModel(principal: Principal, modelId: string, write: boolean) {
    const served = this.served.get(modelId)
    if (!served) throw new AppError('NOT_FOUND', `model ${modelId} not found`)
    const access = decideAccess(principal, { write, endpointId: modelId })
    if (!access.allowed) throw new AppError('FORBIDDEN', access.detail)
    if (served.endpointId === null) {
      throw new AppError('NOT_READY', `model ${modelId} is not available: ${served.unavailable}`)
    }
    return { model: served.model, endpointId: served.endpointId }
  }

  private endpoint(endpointId: string): Promise<EndpointView> {
    return this.deps.endpoints.get(this.deps.ownerAccountId, endpointId)
  }

  /**
   * Validates and prices the job, refuses it (402) when the caller's balance cannot cover the
   * price, then queues it on the model's endpoint. `webhook` and `s3Config` are refused: the
   * result lives in the platform's store (docs/public-endpoints.md). `trace`: the queuing
   * request's span, which the job's spans join.
   */
  async submit(
    principal: Principal,
    modelId: string,
    body: unknown,
    sync: boolean,
    options: { trace?: TraceOrigin } = {},
  ): Promise<{ job: JobView; record: ModelJobRecord }> {
    const { model, endpointId } = this.servedModel(principal, modelId, true)
    if (!isObject(body)) throw badRequest(['body: must be a JSON object with an input object'])
    const problems: string[] = []
    if (body.webhook !== undefined) problems.push('body.webhook: not supported by public models')
    if (body.s3Config !== undefined) problems.push('body.s3Config: not supported by public models')
    const checked =
      body.input === undefined
        ? { ok: false as const, problems: ['input: required'] }
        : validateModelInput(model.kind, body.input)
    if (!checked.ok) problems.push(...checked.problems)
    if (problems.length > 0 || !checked.ok) throw badRequest(problems)
    const endpoint = await this.endpoint(endpointId)
    const { kind: _kind, ...workerInput } = checked.input
    const submission = { input: workerInput, policy: body.policy }
    parseSubmission(submission, endpoint.timeout)

    const price = maxPriceNano(model.price, checked.input)
    const balance = await this.deps.credits.balanceNano(principal.accountId)
    if (balance < price) {
      throw new AppError(
        'PAYMENT_REQUIRED',
        `this job costs up to ${usd(price)} and the balance of account ${principal.accountId} is ${usd(balance)}: add credits to run it`,
        { errors: [`price: ${nanoToUsd(price)} USD`, `balance: ${nanoToUsd(balance)} USD`] },
      )
    }
    const record: ModelJobRecord = {
      jobId: sync ? `${SYNC_JOB_ID_PREFIX}${timeOrderedUuid()}` : timeOrderedUuid(),
      modelId,
      endpointId,
      accountId: principal.accountId,
      maxPriceNano: price,
      costNano: null,
      objectKey: null,
      createdAt: this.deps.clock.now().toISOString(),
      settledAt: null,
      objectExpiresAt: null,
    }
    // The record first: a worker may finish the job before submit returns, and its settlement
    // needs the record.
    await this.deps.repo.insert(record)
    const job = await this.deps.jobs.submit(endpoint, submission, sync, {
      id: record.jobId,
      ...(options.trace ? { trace: options.trace } : {}),
    })
    return { job, record }
  }

  /** The caller's job: another account's job is 404, like an unknown one. */
  async record(principal: Principal, modelId: string, jobId: string, write: boolean) {
    const { endpointId } = this.servedModel(principal, modelId, write)
    const record = await this.deps.repo.find(jobId)
    if (!record || record.accountId !== principal.accountId || record.modelId !== modelId) {
      throw jobNotFound(jobId)
    }
    return { record, endpointId }
  }

  async status(principal: Principal, modelId: string, jobId: string): Promise<JobBody> {
    const { record, endpointId } = await this.record(principal, modelId, jobId, false)
    return this.present(await this.deps.jobs.get(endpointId, jobId), record)
  }

  async waitForEnd(
    principal: Principal,
    modelId: string,
    jobId: string,
    waitMs: number,
  ): Promise<JobBody> {
    const { record, endpointId } = await this.record(principal, modelId, jobId, false)
    return this.present(await this.deps.jobs.waitForEnd(endpointId, jobId, waitMs), record)
  }

  async stream(
    principal: Principal,
    modelId: string,
    jobId: string,
    waitMs: number,
  ): Promise<{ status: JobView['status']; chunks: StreamChunk[] }> {
    const { endpointId } = await this.record(principal, modelId, jobId, false)
    return this.deps.jobs.readStream(endpointId, jobId, waitMs)
  }

  async cancel(principal: Principal, modelId: string, jobId: string): Promise<JobBody> {
    const { record, endpointId } = await this.record(principal, modelId, jobId, true)
    return this.present(await this.deps.jobs.cancel(endpointId, jobId), record)
  }

  /**
   * The job as `/status` answers it, with the output a caller sees: `{image_url, cost}` for an
   * image, the worker's output plus `cost` otherwise. A COMPLETED job is settled first.
   */
  async present(job: JobView, record: ModelJobRecord): Promise<JobBody> {
    const body = jobBody(job, this.deps.clock.now())
    if (job.status !== 'COMPLETED') return body
    const settled = await this.settle(job, record)
    const cost = nanoToUsd(settled.costNano ?? 0)
    const model = this.served.get(record.modelId)?.model
    if (model?.kind === 'image' || settled.objectKey !== null) {
      if (settled.objectKey === null || settled.objectExpiresAt === null) {
        return {
          ...body,
          status: 'FAILED',
          error: 'the model worker returned no image; nothing was charged',
          output: undefined,
        }
      }
      const url = this.deps.signer.url(
        this.deps.baseUrl(),
        settled.objectKey,
        new Date(settled.objectExpiresAt),
      )
      return { ...body, output: { image_url: url, cost } }
    }
    const output = isObject(job.output) ? job.output : { result: job.output }
    return { ...body, output: { ...output, cost } }
  }

  /** Called when any job completes: a model job is settled at once, whoever reads it later. */
  async onJobCompleted(job: JobView): Promise<void> {
    if (!this.byEndpoint.has(job.endpointId) || job.status !== 'COMPLETED') return
    const record = await this.deps.repo.find(job.id)
    if (!record) return
    try {
      await this.settle(job, record)
    } catch (error) {
      this.deps.warn?.('settling a public model job failed; it is retried when read', {
        jobId: job.id,
        err: (error as Error).message,
      })
    }
  }

  /**
   * Stores the result and charges the caller, once per job however many readers (and replicas)
   * race: the store's claim decides who charges.
   */
  settle(job: JobView, record: ModelJobRecord): Promise<ModelJobRecord> {
    if (record.settledAt !== null) return Promise.resolve(record)
    const pending = this.settling.get(job.id)
    if (pending) return pending
    const settling = this.settleNow(job, record).finally(() => this.settling.delete(job.id))
    this.settling.set(job.id, settling)
    return settling
  }

  private async settleNow(job: JobView, record: ModelJobRecord): Promise<ModelJobRecord> {
    const model = this.served.get(record.modelId)?.model
    const now = this.deps.clock.now()
    let objectKey: string | null = null
    let objectExpiresAt: string | null = null
    let costNano = record.maxPriceNano
    if (model?.kind === 'image') {
      const image = imageOf(job.output)
      if (image) {
        objectKey = `images/${job.id}.${image.extension}`
        await this.deps.objects.put(objectKey, image.bytes, image.contentType)
        const generatedAt = job.completedAt ? Date.parse(job.completedAt) : now.getTime()
        objectExpiresAt = new Date(generatedAt + IMAGE_URL_TTL_MS).toISOString()
      } else costNano = 0
    } else if (model) {
      const input = validateModelInput(model.kind, job.input)
      if (input.ok) costNano = finalPriceNano(model.price, input.input, usageOf(job.output))
    }
    costNano = Math.min(costNano, record.maxPriceNano)
    const claimed = await this.deps.repo.claimSettlement(job.id, {
      costNano,
      objectKey,
      objectExpiresAt,
      settledAt: now.toISOString(),
    })
    if (claimed && costNano > 0) {
      await this.deps.credits.charge({
        accountId: record.accountId,
        amountNano: costNano,
        note: `public model ${record.modelId}, job ${job.id}`,
      })
      await this.deps.usage?.record(record.accountId, {
        resourceKind: 'endpoint',
        resourceId: record.modelId,
        category: 'endpoint',
        amountNano: costNano,
        at: now,
      })
    }
    const settled = await this.deps.repo.find(job.id)
    if (!settled) throw new Error(`public model job ${job.id} vanished while settling`)
    return settled
  }

  /**
   * The object behind a signed URL (the signature is checked by the caller): 410 once expired,
   * 404 when it is gone.
   */
  async object(key: string): Promise<{ body: Buffer; contentType: string }> {
    const found = await this.deps.objects.get(key)
    if (!found) throw new AppError('NOT_FOUND', `object ${key} not found`)
    return found
  }

  /** Deletes stored results whose URLs expired before `now`; returns how many. */
  async purgeExpiredObjects(limit = 100): Promise<number> {
    const expired = await this.deps.repo.listExpiredObjects(
      this.deps.clock.now().toISOString(),
      limit,
    )
    for (const record of expired) {
      if (record.objectKey) await this.deps.objects.delete(record.objectKey)
      await this.deps.repo.clearObject(record.jobId)
    }
    return expired.length
  }
}

const IMAGE_TYPES: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
}

/** The image a worker returned: `{image_base64, content_type?}` (PNG when no type is given). */
function imageOf(
  output: unknown,
): { bytes: Buffer; contentType: string; extension: string } | undefined {
  if (!isObject(output) || typeof output.image_base64 !== 'string') return undefined
  const contentType =
    typeof output.content_type === 'string' && IMAGE_TYPES[output.content_type]
      ? output.content_type
      : 'image/png'
  const bytes = Buffer.from(output.image_base64, 'base64')
  if (bytes.length === 0) return undefined
  return { bytes, contentType, extension: IMAGE_TYPES[contentType]! }
}

function usageOf(output: unknown): TokenUsage | undefined {
  if (!isObject(output) || !isObject(output.usage)) return undefined
  const { prompt_tokens, completion_tokens } = output.usage
  if (
    typeof prompt_tokens !== 'number' ||
    typeof completion_tokens !== 'number' ||
    prompt_tokens < 0 ||
    completion_tokens < 0
  ) {
    return undefined
  }
  return { prompt_tokens, completion_tokens }
}

export type { ModelInput }
