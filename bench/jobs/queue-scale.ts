/**
 * The queue at scale (bench/README.md, "Scale of the queue"): an endpoint with `--queued` jobs
 * waiting (1 000 000 by default) and no worker, written straight into the store (through /run
 * it would take minutes), then the server's memory and the latency of `/run`, `/status` and
 * `/health` on it.
 */
import { performance } from 'node:perf_hooks'
import path from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { timeOrderedUuid } from '../../src/shared/ids.js'
import {
  createEndpoint,
  fmt,
  json,
  percentile,
  rssMb,
  sleep,
  type BenchServer,
} from './bench-server.js'

export interface QueueScaleResult {
  queued: number
  rssMb: number
  runP50: number
  statusP50: number
  healthP50: number
}

/** Writes `count` queued no-op jobs of the endpoint into the store; returns a sample of ids. */
export async function fill(
  server: BenchServer,
  endpointId: string,
  accountId: string,
  count: number,
): Promise<string[]> {
  const createdAt = Date.now() - 60_000
  const sample: string[] = []
  if (server.storeUrl === undefined) {
    const db = new Database(path.join(server.dataDir, 'podyard.db'))
    db.pragma('busy_timeout = 10000')
    const insert = db.prepare(
      `insert into jobs (id, endpoint_id, account_id, status, sync, low_priority,
         execution_timeout_ms, ttl_ms, input, created_at, expires_at, attempts, payload_size)
       values (?, ?, ?, 'IN_QUEUE', 0, 0, 600000, 86400000, '{}', ?, ?, 0, 2)`,
    )
    const batch = db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const at = createdAt + Math.floor(i / 1000)
        const id = timeOrderedUuid(at)
        if (i % 997 === 0) sample.push(id)
        insert.run(
          id,
          endpointId,
          accountId,
          new Date(at).toISOString(),
          new Date(at + 86_400_000).toISOString(),
        )
      }
    })
    for (let from = 0; from < count; from += 50_000) batch(from, Math.min(count, from + 50_000))
    db.close()
    return sample
  }
  const client = new pg.Client({ connectionString: server.storeUrl })
  await client.connect()
  try {
    for (let from = 0; from < count; from += 100_000) {
      const to = Math.min(count, from + 100_000)
      await client.query(
        `insert into jobs (id, endpoint_id, account_id, status, sync, low_priority,
           execution_timeout_ms, ttl_ms, input, created_at, expires_at, attempts, payload_size)
         select gen_random_uuid()::text, $1, $2, 'IN_QUEUE', 0, 0, 600000, 86400000, '{}'::jsonb,
                $3::timestamptz + (n || ' milliseconds')::interval,
                $3::timestamptz + interval '1 day', 0, 2
           from generate_series($4::int, $5::int - 1) as n`,
        [endpointId, accountId, new Date(createdAt).toISOString(), from, to],
      )
    }
    const { rows } = await client.query<{ id: string }>(
      'select id from jobs where endpoint_id = $1 and seq % 997 = 0',
      [endpointId],
    )
    for (const row of rows) sample.push(row.id)
  } finally {
    await client.end()
  }
  return sample
}

/** The account of the endpoint's jobs, as the store has it on one of them. */
export async function accountOf(server: BenchServer, endpointId: string): Promise<string> {
  if (server.storeUrl === undefined) {
    const db = new Database(path.join(server.dataDir, 'podyard.db'), { readonly: true })
    try {
      const row = db
        .prepare('select account_id from jobs where endpoint_id = ? limit 1')
        .get(endpointId) as { account_id: string }
      return row.account_id
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: server.storeUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ account_id: string }>(
      'select account_id from jobs where endpoint_id = $1 limit 1',
      [endpointId],
    )
    return rows[0]!.account_id
  } finally {
    await client.end()
  }
}

async function timeCalls(calls: number, call: (i: number) => Promise<void>): Promise<number[]> {
  const durations: number[] = []
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now()
    await call(i)
    durations.push(performance.now() - t0)
  }
  return durations.sort((a, b) => a - b)
}

export async function queueScale(
  server: BenchServer,
  queued: number,
  calls: number,
): Promise<QueueScaleResult> {
  const endpointId = await createEndpoint(server, 'bench-queue-scale')
  const base = `${server.url}/v2/${endpointId}`
  // The endpoint's account, as the store has it on a job.
  await json('POST', `${base}/run`, { input: {} })
  const accountId = await accountOf(server, endpointId)
  const t0 = performance.now()
  const sample = await fill(server, endpointId, accountId, queued)
  console.log(
    `\nqueue scale: ${queued} queued jobs written into the store in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  )
  // Let the server settle (its sweeps and the autoscaler pass over the new rows once).
  await sleep(3_000)
  const health0 = await json<{ jobs: { inQueue: number } }>('GET', `${base}/health`)
  const run = await timeCalls(calls, async () => {
    await json('POST', `${base}/run`, { input: {} })
  })
  const status = await timeCalls(calls, async (i) => {
    await json('GET', `${base}/status/${sample[i % sample.length]!}`)
  })
  const health = await timeCalls(Math.min(calls, 200), async () => {
    await json('GET', `${base}/health`)
  })
  const rss = rssMb(server.child.pid)
  console.log(`  /health counts ${health0.jobs.inQueue} in queue; server RSS ${rss.toFixed(0)} MB`)
  console.log(
    `  /run p50 ${fmt(percentile(run, 50))} (p99 ${fmt(percentile(run, 99))}), ` +
      `/status p50 ${fmt(percentile(status, 50))} (p99 ${fmt(percentile(status, 99))}), ` +
      `/health p50 ${fmt(percentile(health, 50))} (p99 ${fmt(percentile(health, 99))})`,
  )
  return {
    queued: health0.jobs.inQueue,
    rssMb: rss,
    runP50: percentile(run, 50),
    statusP50: percentile(status, 50),
    healthP50: percentile(health, 50),
  }
}
