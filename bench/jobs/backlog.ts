/**
 * The backlog part (bench/README.md, "bench/jobs"): the throughput part's round on SQLite while
 * another endpoint, one without a worker, has jobs queued. A queue that no worker takes should
 * not slow the jobs of other endpoints; run-bench.ts prints each backlog's throughput and its
 * ratio to the run with none.
 */
import {
  ADMIN_KEY,
  createEndpoint,
  json,
  loadAverage,
  sleep,
  type BenchServer,
} from './bench-server.js'
import { accountOf, fill } from './queue-scale.js'
import { RawHttpConnection } from './raw-http.js'
import { throughput, type ThroughputResult, type ThroughputSettings } from './throughput.js'

/**
 * Queues `count` no-op jobs on a new endpoint that has no worker. `via` `store`: the first
 * through `/run` (so that the store names the endpoint's account), the others written straight
 * into the store as the scale part does (queue-scale.ts); `run`: all through `/run`, from 32
 * keep-alive connections. With 0, the endpoint alone.
 */
export async function queueBacklog(
  server: BenchServer,
  count: number,
  via: 'store' | 'run',
): Promise<void> {
  const endpointId = await createEndpoint(server, 'bench-backlog')
  if (count > 0 && via === 'store') {
    await json('POST', `${server.url}/v2/${endpointId}/run`, { input: {} })
    await fill(server, endpointId, await accountOf(server, endpointId), count - 1)
  } else if (count > 0) {
    await submitThroughRun(new URL(`${server.url}/v2/${endpointId}/run`), count)
  }
  // As the scale part: the server's sweeps and the autoscaler pass over the new rows once first.
  await sleep(3_000)
}

/** `count` no-op `POST /run` to `url` from 32 concurrent keep-alive loops. */
async function submitThroughRun(url: URL, count: number): Promise<void> {
  const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }
  let next = 0
  const loop = async () => {
    const connection = new RawHttpConnection(url)
    try {
      while (next < count) {
        next += 1
        const response = await connection.request('POST', url.pathname, '{"input":{}}', headers)
        if (response.status !== 200) throw new Error(`POST /run answered ${response.status}`)
      }
    } finally {
      connection.close()
    }
  }
  await Promise.all(Array.from({ length: 32 }, loop))
}

/**
 * The throughput with each of `backlogs` jobs queued on a worker-less endpoint, `rounds` times
 * (each round every backlog in turn, so that the machine's load drifts over all of them alike),
 * each measurement on a fresh server that `withServer` starts and stops; the results by backlog.
 */
export async function backlogThroughputs(
  backlogs: number[],
  via: 'store' | 'run',
  rounds: number,
  settings: ThroughputSettings,
  withServer: (run: (server: BenchServer) => Promise<void>) => Promise<void>,
): Promise<Map<number, ThroughputResult[]>> {
  const results = new Map(backlogs.map((backlog) => [backlog, [] as ThroughputResult[]]))
  for (let round = 1; round <= rounds; round++) {
    for (const backlog of backlogs) {
      await withServer(async (server) => {
        await queueBacklog(server, backlog, via)
        console.log(
          `\n== backlog: ${backlog} jobs queued on a worker-less endpoint, round ${round} of ` +
            `${rounds}; load average ${loadAverage()}`,
        )
        const result = await throughput(server, settings)
        if (result) results.get(backlog)!.push(result)
      })
    }
  }
  return results
}
