/**
 * bench/fleet's GraphQL `pod` query (bench/README.md): requests per second at `clients` clients
 * as the member that owns the pods, interleaved round by round with an anchor, mercurius
 * answering `{ hello }` (startMercuriusHello), and each process's CPU per request over all rounds.
 */
import type { BenchServer } from '../bench-server.js'
import { fmt, met, ratio } from './fleet-figures.js'
import { closedLoop, cpuSeconds, loadAverage, median, startMercuriusHello } from './load.js'
import type { ReadBench } from './pod-reads.js'

/** The query a client polling a pod sends (the id, the name, the status and the uptime). */
export const POD_QUERY =
  'query pod($id: String!) { pod(input: { podId: $id }) { id name desiredStatus runtime { uptimeInSeconds } } }'

const HELLO_BODY = JSON.stringify({ query: '{ hello }' })

interface PodAnswer {
  data?: { pod?: { id: string } | null }
  errors?: unknown[]
}

/**
 * The `pod` query of one of `ids` at random as the caller of `headers` (the pods' owner) and the
 * anchor's `{ hello }`, round by round; medians, the ratio, and each one's CPU per request.
 */
export async function graphqlReads(
  bench: ReadBench,
  server: BenchServer,
  ids: string[],
  headers: Record<string, string>,
): Promise<void> {
  const { settings, targets, figures } = bench
  // The bodies made once, so that the clients' JSON work is not in the measured loop.
  const bodies = ids.map((id) => JSON.stringify({ query: POD_QUERY, variables: { id } }))
  const pick = () => ({
    method: 'POST',
    path: '/graphql',
    body: bodies[Math.floor(Math.random() * bodies.length)]!,
  })
  const pickHello = () => ({ method: 'POST', path: '/graphql', body: HELLO_BODY })
  const sample = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers,
    body: bodies[0]!,
  })
  const sampleText = await sample.text()
  const answer = JSON.parse(sampleText) as PodAnswer
  // An error answers 200 as well: the sample must be the pod, or the rounds measure errors.
  if (sample.status !== 200 || answer.errors || answer.data?.pod?.id !== ids[0]) {
    throw new Error(`GraphQL pod answered ${sample.status}: ${sampleText.slice(0, 300)}`)
  }
  const anchor = await startMercuriusHello()
  try {
    // Warm-up of both (JIT), not counted.
    await closedLoop(server.url, settings.clients, 1, pick, headers)
    await closedLoop(anchor.url, settings.clients, 1, pickHello, headers)
    const ours: number[] = []
    const theirs: number[] = []
    const cpuBefore = cpuSeconds(server.pid)
    const anchorCpuBefore = cpuSeconds(anchor.pid)
    let served = 0
    let anchorServed = 0
    let failures = 0
    const failed: string[] = []
    for (let round = 0; round < settings.rounds; round++) {
      const a = await closedLoop(anchor.url, settings.clients, settings.seconds, pickHello, headers)
      const b = await closedLoop(server.url, settings.clients, settings.seconds, pick, headers)
      theirs.push(a.perSecond)
      ours.push(b.perSecond)
      served += b.requests
      anchorServed += a.requests
      failures += a.failures + b.failures
      failed.push(...a.firstFailures, ...b.firstFailures)
    }
    if (failures > 0)
      console.log(`  ${failures} queries failed, e.g. ${failed.slice(0, 2).join('; ')}`)
    const cpuPerQuery = ((cpuSeconds(server.pid) - cpuBefore) * 1e6) / served
    const anchorCpu = ((cpuSeconds(anchor.pid) - anchorCpuBefore) * 1e6) / anchorServed
    const rps = median(ours)
    const anchorRps = median(theirs)
    console.log(
      `\nGraphQL pod(input: {podId}) { id name desiredStatus runtime { uptimeInSeconds } } of ${ids.length} RUNNING pods, as their owner (${sampleText.length} bytes)`,
    )
    console.log(
      `  ${settings.clients} clients: ${fmt(rps, 0)} req/s (rounds ${ours.map((r) => fmt(r, 0)).join(', ')}), mercurius { hello } ${fmt(anchorRps, 0)} req/s (rounds ${theirs.map((r) => fmt(r, 0)).join(', ')}): ${ratio(rps, anchorRps)} of the anchor; target >= ${targets.graphqlRatio}x: ${met(rps / anchorRps >= targets.graphqlRatio)}`,
    )
    console.log(
      `  CPU per request (each process, all rounds): podyard ${fmt(cpuPerQuery, 1)} µs, mercurius { hello } ${fmt(anchorCpu, 1)} µs (${ratio(cpuPerQuery, anchorCpu)}); load average ${loadAverage()}`,
    )
    figures.add({
      what: `GraphQL pod query, ${settings.clients} clients`,
      measured: `${fmt(rps, 0)} req/s, ${fmt(cpuPerQuery, 1)} µs CPU/req`,
      target: `>= ${targets.graphqlRatio}x anchor`,
      anchor: `mercurius { hello } ${fmt(anchorRps, 0)} req/s, ${fmt(anchorCpu, 1)} µs CPU/req`,
      ratio: rps / anchorRps,
      met: rps / anchorRps >= targets.graphqlRatio,
    })
  } finally {
    await anchor.stop()
  }
}
