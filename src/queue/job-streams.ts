import { sql } from 'kysely'
import type { JobStatus } from '../domain/serverless/job.js'
import type { StreamRead } from '../domain/serverless/ports.js'
import type { JobStatements } from './job-statements.js'
import { chunks, readJobRow, type Db } from './job-rows.js'

/**
 * Stream chunks of a running job (docs/serverless-queue.md, "Progress and streaming"): numbered
 * 1, 2, 3... per job in `job_stream`, appended by its worker, read by cursor or by position.
 */

/**
 * Appends `outputs` when the worker holds the job; with `firstIndex` (podyard/worker's
 * `chunk_index`), only when that index has not been appended in this attempt yet. True when
 * appended.
 */
export async function appendStreamChunks(
  db: Db,
  endpointId: string,
  jobId: string,
  workerId: string,
  outputs: unknown[],
  firstIndex: number | undefined,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    let update = tx
      .updateTable('jobs')
      .set({
        stream_seq: sql`stream_seq + ${outputs.length}`,
        version: sql`version + 1`,
        // Numbered chunks: the attempt they count in and the next index expected.
        ...(firstIndex === undefined
          ? {}
          : { stream_attempt: sql`attempts`, stream_next_index: firstIndex + outputs.length }),
      })
      .where('id', '=', jobId)
      .where('endpoint_id', '=', endpointId)
      .where('worker_id', '=', workerId)
      .where('status', '=', 'IN_PROGRESS')
    if (firstIndex !== undefined) {
      // Not a repeat: the attempt's first numbered chunk, or at or past the next index expected.
      update = update.where((eb) =>
        eb.or([
          eb('stream_attempt', '<>', eb.ref('attempts')),
          eb('stream_next_index', '<=', firstIndex),
        ]),
      )
    }
    const row = await update.returning('stream_seq').executeTakeFirst()
    if (row === undefined) return false
    const first = Number(row.stream_seq) - outputs.length + 1
    for (const batch of chunks(
      outputs.map((output, i) => ({
        job_id: jobId,
        seq: first + i,
        output: JSON.stringify(output ?? null),
      })),
      200,
    )) {
      await tx.insertInto('job_stream').values(batch).execute()
    }
    return true
  })
}

/**
 * The chunks after `afterSeq` (a reader that keeps its own position), or, without it, those not
 * yet delivered to a cursor-less reader (RunPod's clients), moving the job's cursor past them in
 * the same transaction. Undefined when the job is unknown.
 */
export async function readStreamChunks(
  db: Db,
  statements: JobStatements,
  endpointId: string,
  jobId: string,
  afterSeq?: number,
): Promise<StreamRead | undefined> {
  const read = async (from: Db, after: number) =>
    (
      await from
        .selectFrom('job_stream')
        .select(['seq', 'output'])
        .where('job_id', '=', jobId)
        .where('seq', '>', after)
        .orderBy('seq')
        .execute()
    ).map((r) => ({ seq: Number(r.seq), output: JSON.parse(r.output) as unknown }))
  if (afterSeq !== undefined) {
    const row = await readJobRow(db, statements, endpointId, jobId)
    if (row === undefined) return undefined
    const found = await read(db, afterSeq)
    return {
      status: row.status as JobStatus,
      chunks: found,
      position: found.at(-1)?.seq ?? afterSeq,
    }
  }
  return db.transaction().execute(async (tx) => {
    const row = await readJobRow(tx, statements, endpointId, jobId, true)
    if (row === undefined) return undefined
    const from = Number(row.stream_delivered)
    const found = await read(tx, from)
    const position = found.at(-1)?.seq ?? from
    if (position !== from) {
      await tx
        .updateTable('jobs')
        .set({ stream_delivered: position })
        .where('seq', '=', row.seq)
        .execute()
    }
    return { status: row.status as JobStatus, chunks: found, position }
  })
}
