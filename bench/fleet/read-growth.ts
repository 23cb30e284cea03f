/**
 * bench/fleet's read cost as the pods grow (bench/README.md, `--part=read-growth`): at each
 * count of `--growth` (10, 1 000 and 10 000 pods by default) `GET /v2/pods/{id}` at one client,
 * p50 and p99, and the p50 at the largest count over the p50 at the smallest: flat is what the
 * target asks (a read by id should not cost more with more pods in the store and the fleet).
 */
import type { BenchServer } from '../bench-server.js'
import { fmt, met } from './fleet-figures.js'
import { closedLoop, loadAverage, percentile, sequential } from './load.js'
import { randomPodRead, type ReadBench } from './pod-reads.js'

interface GrowthStep {
  pods: number
  p50: number
  p99: number
}

/**
 * For each of `counts` (ascending): `growTo(count)` creates pods until the caller of `headers`
 * owns `count` of them, all RUNNING, and answers their ids; then, after a warm-up,
 * `latencyRequests` reads of pods at random, one after the other, are timed.
 */
export async function readGrowth(
  bench: ReadBench,
  server: BenchServer,
  headers: Record<string, string>,
  counts: number[],
  growTo: (count: number) => Promise<string[]>,
): Promise<void> {
  const { settings, targets, figures } = bench
  const steps: GrowthStep[] = []
  for (const count of counts) {
    const ids = await growTo(count)
    // Not counted: a second of reads at `clients` clients (the JIT; the server has just started
    // before the first count), then every pod read once (the answers the server keeps per pod).
    await closedLoop(server.url, settings.clients, 1, randomPodRead(ids), headers)
    const everyPodOnce = ids.map((id) => ({ method: 'GET', path: `/v2/pods/${id}` }))
    let next = 0
    await sequential(server.url, ids.length, () => everyPodOnce[next++]!, headers)
    const latency = await sequential(
      server.url,
      settings.latencyRequests,
      randomPodRead(ids),
      headers,
    )
    const step = { pods: ids.length, p50: percentile(latency, 50), p99: percentile(latency, 99) }
    steps.push(step)
    console.log(
      `  ${step.pods} pods: GET /v2/pods/{id} at 1 client p50 ${fmt(step.p50, 3)} ms, p99 ${fmt(step.p99, 3)} ms (${settings.latencyRequests} reads; load average ${loadAverage()})`,
    )
  }
  const first = steps[0]
  const last = steps.at(-1)
  if (!first || !last) return
  const growth = last.p50 / first.p50
  console.log(
    `  p50 at ${last.pods} pods over p50 at ${first.pods}: ${fmt(growth)}x; target <= ${targets.readGrowthRatio}x (flat): ${met(growth <= targets.readGrowthRatio)}`,
  )
  figures.add({
    what: `GET /v2/pods/{id} p50 at 1 client as pods grow (${steps.map((s) => s.pods).join(', ')})`,
    measured: steps.map((s) => `${fmt(s.p50, 3)} ms`).join(', '),
    target: `<= ${targets.readGrowthRatio}x (flat)`,
    anchor: `the same at ${first.pods} pods: ${fmt(first.p50, 3)} ms`,
    ratio: growth,
    met: growth <= targets.readGrowthRatio,
  })
}
