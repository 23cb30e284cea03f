import { resultRetentionMs } from '../domain/serverless/job.js'
import type { CompleteResult, IgnoredReason } from '../domain/serverless/ports.js'
import type { Clock } from '../shared/clock.js'
import type { StoreCapabilities } from '../shared/store-capabilities.js'
import {
  addWebhookDelivery,
  IsoMemo,
  jsonOrNull,
  readJobRow,
  toJob,
  toView,
  type Db,
  type JobRow,
} from './job-rows.js'
import { runStatement, type JobStatements } from './job-statements.js'
import { lockOrder } from './lock-order.js'

/** A worker's result for a job it holds (job-done). */
export interface Completion {
  endpointId: string
  jobId: string
  workerId: string
  result: { output?: unknown; error?: string }
}

export interface CompletionOutcome {
  outcome: CompleteResult
  /** A webhook delivery was added in the same transaction. */
  webhook: boolean
}

/**
 * The terminal transition of a job a worker finished (docs/serverless-queue.md): one
 * conditional update per completion, or on PostgreSQL one statement for a whole batch, with
 * the job's webhook delivery added in the same transaction. The queue group-commits them
 * (write-batcher.ts); this writes one group inside the transaction it is given.
 */
export class CompletionWriter {
  private readonly completedAt = new IsoMemo()
  private readonly retainSync = new IsoMemo()
  private readonly retainAsync = new IsoMemo()

  constructor(
    private readonly statements: JobStatements,
    private readonly clock: Clock,
    private readonly capabilities: StoreCapabilities,
  ) {}

  /** One completion, inside `tx` (maybe with other completions). */
  async completeIn(
    tx: Db,
    { endpointId, jobId, workerId, result }: Completion,
  ): Promise<CompletionOutcome> {
    const now = this.clock.now().getTime()
    // One conditional update (it locks the row on PostgreSQL); the job is read only to say
    // why nothing changed, which is rare.
    const parameters = [
      result.error !== undefined ? 'FAILED' : 'COMPLETED',
      jsonOrNull(result.output),
      result.error ?? null,
      ...this.times(now),
      jobId,
      endpointId,
      workerId,
    ]
    const [updated] = await runStatement<JobRow>(tx, this.statements.complete, parameters)
    if (updated === undefined) {
      return { outcome: await this.notApplied(tx, endpointId, jobId), webhook: false }
    }
    const webhook = await addWebhookDelivery(tx, updated, now)
    return { outcome: { applied: true, job: toView(toJob(updated)) }, webhook }
  }

  /**
   * A group of completions inside `tx`, each outcome at its completion's index: over a pool in
   * one statement (a round trip is dear); on a single connection one after the other in the
   * lock order (by job id), whatever order they arrived in: a heartbeat of the same worker's
   * jobs locks them in that order too (lock-order.ts).
   */
  async completeAllIn(tx: Db, completions: Completion[]): Promise<CompletionOutcome[]> {
    if (!this.capabilities.singleConnection) return this.completeBatchIn(tx, completions)
    const outcomes: CompletionOutcome[] = new Array(completions.length)
    for (const i of lockOrder(completions, (c) => c.jobId)) {
      outcomes[i] = await this.completeIn(tx, completions[i]!)
    }
    return outcomes
  }

  /**
   * PostgreSQL: a batch of completions in one statement (JobStatements.completeBatch), which
   * locks the rows in the lock order itself; one round trip instead of one per completion.
   */
  private async completeBatchIn(tx: Db, completions: Completion[]): Promise<CompletionOutcome[]> {
    const now = this.clock.now().getTime()
    const parameters: unknown[] = []
    completions.forEach(({ endpointId, jobId, workerId, result }, i) => {
      parameters.push(
        i,
        jobId,
        endpointId,
        workerId,
        result.error !== undefined ? 'FAILED' : 'COMPLETED',
        jsonOrNull(result.output),
        result.error ?? null,
      )
    })
    parameters.push(...this.times(now))
    const rows = await runStatement<JobRow & { completion_index?: number | string }>(
      tx,
      this.statements.completeBatch(completions.length),
      parameters,
    )
    const outcomes: CompletionOutcome[] = new Array(completions.length)
    for (const row of rows) {
      const i = Number(row.completion_index)
      delete row.completion_index
      const webhook = await addWebhookDelivery(tx, row, now)
      outcomes[i] = { outcome: { applied: true, job: toView(toJob(row)) }, webhook }
    }
    for (let i = 0; i < completions.length; i++) {
      if (outcomes[i] !== undefined) continue
      const { endpointId, jobId } = completions[i]!
      outcomes[i] = { outcome: await this.notApplied(tx, endpointId, jobId), webhook: false }
    }
    return outcomes
  }

  /** completed_at, and until when a sync and an async job's result is kept. */
  private times(now: number): [string, string, string] {
    return [
      this.completedAt.of(now),
      this.retainSync.of(now + resultRetentionMs(true)),
      this.retainAsync.of(now + resultRetentionMs(false)),
    ]
  }

  /** Why a completion changed nothing: the job is gone, already ended, or another's. */
  private async notApplied(
    tx: Db,
    endpointId: string,
    jobId: string,
  ): Promise<{ applied: false; reason: IgnoredReason }> {
    const row = await readJobRow(tx, this.statements, endpointId, jobId)
    if (row === undefined) return { applied: false, reason: 'not-found' }
    if (row.status !== 'IN_PROGRESS') return { applied: false, reason: 'not-in-progress' }
    return { applied: false, reason: 'not-owner' }
  }
}
