/**
 * bench/fleet's `GET /v2/pods/{id}` (bench/README.md): one client's latency, and requests per
 * second at `clients` clients interleaved round by round with two anchors that answer the same
 * body, a bare node:http server and Fastify reading the document by primary key from SQLite.
 */
import type { BenchServer } from '../bench-server.js'
import { fmt, met, ratio, type FleetFigures } from './fleet-figures.js'
import {
  closedLoop,
  cpuSeconds,
  loadAverage,
  median,
  percentile,
  sequential,
  startBareHttp,
  startFastifySqlite,
} from './load.js'

/** What the read benches share: the load's shape, their targets and the table they add to. */
export interface ReadBench {
  /** Closed-loop clients, seconds a round, rounds, and timed reads one after the other. */
  settings: { clients: number; seconds: number; rounds: number; latencyRequests: number }
  targets: { getP50Ms: number; getRatio: number; graphqlRatio: number; readGrowthRatio: number }
  figures: FleetFigures
}

/** One of `ids` at random, as a `GET /v2/pods/{id}` for `closedLoop` and `sequential`. */
export const randomPodRead = (ids: readonly string[]) => () => ({
  method: 'GET',
  path: `/v2/pods/${ids[Math.floor(Math.random() * ids.length)]}`,
})

/**
 * GET /v2/pods/{id} as the caller of `headers` (the owner of the pods, or the admin) against
 * the anchors, round by round; medians, and each process's CPU per request over all rounds.
 */
export async function podReads(
  bench: ReadBench,
  server: BenchServer,
  ids: string[],
  label: string,
  headers: Record<string, string>,
): Promise<void> {
  const { settings, targets, figures } = bench
  const pick = randomPodRead(ids)
  const sample = await fetch(`${server.url}/v2/pods/${ids[0]}`, { headers })
  if (sample.status !== 200) throw new Error(`GET /v2/pods/${ids[0]} answered ${sample.status}`)
  const sampleJson = (await sample.json()) as { runtime: unknown }
  const body = JSON.stringify(sampleJson)
  const anchor = await startBareHttp(body)
  const framework = await startFastifySqlite(ids, body)
  try {
    // Warm-up of all three (JIT), not counted.
    await closedLoop(server.url, settings.clients, 1, pick, headers)
    await closedLoop(anchor.url, settings.clients, 1, pick, headers)
    await closedLoop(framework.url, settings.clients, 1, pick, headers)
    const latency = await sequential(server.url, settings.latencyRequests, pick, headers)
    const anchorLatency = await sequential(anchor.url, settings.latencyRequests, pick, headers)
    const ours: number[] = []
    const theirs: number[] = []
    const frameworks: number[] = []
    const cpuBefore = cpuSeconds(server.pid)
    const anchorCpuBefore = cpuSeconds(anchor.pid)
    const frameworkCpuBefore = cpuSeconds(framework.pid)
    let served = 0
    let anchorServed = 0
    let frameworkServed = 0
    let failures = 0
    const failed: string[] = []
    for (let round = 0; round < settings.rounds; round++) {
      const a = await closedLoop(anchor.url, settings.clients, settings.seconds, pick, headers)
      const b = await closedLoop(server.url, settings.clients, settings.seconds, pick, headers)
      const c = await closedLoop(framework.url, settings.clients, settings.seconds, pick, headers)
      theirs.push(a.perSecond)
      ours.push(b.perSecond)
      frameworks.push(c.perSecond)
      served += b.requests
      anchorServed += a.requests
      frameworkServed += c.requests
      failures += b.failures
      failed.push(...b.firstFailures)
    }
    if (failures > 0)
      console.log(`  ${failures} reads failed, e.g. ${failed.slice(0, 2).join('; ')}`)
    const cpuPerRead = ((cpuSeconds(server.pid) - cpuBefore) * 1e6) / served
    const anchorCpu = ((cpuSeconds(anchor.pid) - anchorCpuBefore) * 1e6) / anchorServed
    const frameworkCpu = ((cpuSeconds(framework.pid) - frameworkCpuBefore) * 1e6) / frameworkServed
    const p50 = percentile(latency, 50)
    const p99 = percentile(latency, 99)
    console.log(
      `\n${label}: GET /v2/pods/{id} of ${ids.length} RUNNING pods (${body.length} bytes, runtime ${JSON.stringify(sampleJson.runtime)})`,
    )
    console.log(
      `  1 client: p50 ${fmt(p50)} ms, p99 ${fmt(p99)} ms; anchor p50 ${fmt(percentile(anchorLatency, 50))} ms; target p50 < ${targets.getP50Ms} ms: ${met(p50 < targets.getP50Ms)}`,
    )
    const rps = median(ours)
    const anchorRps = median(theirs)
    console.log(
      `  ${settings.clients} clients: ${fmt(rps, 0)} req/s (rounds ${ours.map((r) => fmt(r, 0)).join(', ')}), bare node:http ${fmt(anchorRps, 0)} req/s (rounds ${theirs.map((r) => fmt(r, 0)).join(', ')}): ${ratio(rps, anchorRps)} of the anchor; target >= ${targets.getRatio}x: ${met(rps / anchorRps >= targets.getRatio)}; server CPU ${fmt(cpuPerRead, 0)} µs per read`,
    )
    console.log(
      `  CPU per request (each process, all rounds): podyard ${fmt(cpuPerRead, 1)} µs, bare node:http ${fmt(anchorCpu, 1)} µs (${ratio(cpuPerRead, anchorCpu)}), Fastify + SQLite ${fmt(frameworkCpu, 1)} µs; load average ${loadAverage()}`,
    )
    const frameworkRps = median(frameworks)
    console.log(
      `  for scale: Fastify reading the document by primary key from SQLite, nothing else, ${fmt(frameworkRps, 0)} req/s (rounds ${frameworks.map((r) => fmt(r, 0)).join(', ')}): ${ratio(frameworkRps, anchorRps)} of bare node:http; podyard is ${ratio(rps, frameworkRps)} of it`,
    )
    figures.add({
      what: `${label}: GET /v2/pods/{id}, 1 client`,
      measured: `p50 ${fmt(p50)} ms, p99 ${fmt(p99)} ms`,
      target: `p50 < ${targets.getP50Ms} ms`,
      met: p50 < targets.getP50Ms,
    })
    figures.add({
      what: `${label}: GET /v2/pods/{id}, ${settings.clients} clients`,
      measured: `${fmt(rps, 0)} req/s, ${fmt(cpuPerRead, 1)} µs CPU/req`,
      target: `>= ${targets.getRatio}x anchor`,
      anchor: `bare node:http ${fmt(anchorRps, 0)} req/s, ${fmt(anchorCpu, 1)} µs CPU/req`,
      ratio: rps / anchorRps,
      met: rps / anchorRps >= targets.getRatio,
    })
  } finally {
    await anchor.stop()
    await framework.stop()
  }
}
