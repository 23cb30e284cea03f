/**
 * An A/B of `GET /v2/pods/{id}` between two checkouts (bench/README.md, "Profile notes"): a
 * server of each (`--base=<checkout>`, default this one, against this one), each on 200
 * simulated hosts with recorded workloads and `--pods` pods of a member account, then
 * `--rounds` rounds of `--seconds` s of reads at `--clients` clients as that member, the two
 * servers alternating within each round, and each server's CPU per read from /proc per round.
 * Interleaving is what makes a few microseconds visible on a shared machine.
 *
 * Options: --base=/path/to/checkout --pods=100 --clients=50 --seconds=3 --rounds=6
 */
import { BENCH_ADMIN_KEY, startBenchServer, type BenchServer } from '../bench-server.js'
import { closedLoop, cpuSeconds, loadAverage, median, sleep } from './load.js'
import { writeFileSync } from 'node:fs'
import path from 'node:path'

function option(name: string, fallback: string): string {
  const found = process.argv.find((arg) => arg.startsWith(`--${name}=`))
  return found ? found.slice(name.length + 3) : fallback
}
const settings = {
  base: option('base', ''),
  pods: Number(option('pods', '100')),
  clients: Number(option('clients', '50')),
  seconds: Number(option('seconds', '3')),
  rounds: Number(option('rounds', '6')),
}

const fleet = {
  dataCenters: [{ id: 'US-KS-2', name: 'US-KS-2', region: 'NORTH_AMERICA' }],
  hosts: Array.from({ length: 200 }, (_, i) => ({
    id: `host-${i}`,
    dataCenterId: 'US-KS-2',
    simulated: true,
    vcpus: 32,
    memoryGb: 128,
    diskGb: 2000,
    cpuFlavors: ['cpu3c'],
  })),
  localHost: false,
}

async function call(server: BenchServer, key: string, method: string, at: string, body?: unknown) {
  const response = await fetch(`${server.url}${at}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

interface Side {
  name: string
  server: BenchServer
  key: string
  ids: string[]
  perRead: number[]
}

async function prepare(name: string, root: string | undefined): Promise<Side> {
  const previous = process.env.PODYARD_BENCH_SERVER_ROOT
  if (root) process.env.PODYARD_BENCH_SERVER_ROOT = root
  else delete process.env.PODYARD_BENCH_SERVER_ROOT
  const server = await startBenchServer({
    name: `read-ab-${name}`,
    args: ['--record'],
    env: (dataDir) => {
      const fleetPath = path.join(dataDir, 'fleet.json')
      writeFileSync(fleetPath, JSON.stringify(fleet))
      return { PODYARD_FLEET: fleetPath, PODYARD_SANDBOX: 'none' }
    },
  })
  if (previous === undefined) delete process.env.PODYARD_BENCH_SERVER_ROOT
  else process.env.PODYARD_BENCH_SERVER_ROOT = previous
  const account = await call(server, BENCH_ADMIN_KEY, 'POST', '/v2/admin/accounts', {
    email: 'bench-member@example.com',
  })
  const key = (account.json.apiKey as { key: string }).key
  const ids: string[] = []
  for (let i = 0; i < settings.pods; i++) {
    const pod = await call(server, key, 'POST', '/v2/pods', {
      name: `read-${i}`,
      image: 'runpod/base:0.6.2',
      disk: 10,
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    })
    if (pod.status !== 201) throw new Error(`create answered ${pod.status}`)
    ids.push(pod.json.id as string)
  }
  for (let waited = 0; waited < 60_000; waited += 500) {
    const pending = await call(server, key, 'GET', '/v2/pods?status=PROVISIONING,STARTING')
    if ((pending.json.pods as unknown[]).length === 0) break
    await sleep(500)
  }
  return { name, server, key, ids, perRead: [] }
}

async function reads(side: Side, seconds: number): Promise<number> {
  const pick = () => ({
    method: 'GET',
    path: `/v2/pods/${side.ids[Math.floor(Math.random() * side.ids.length)]}`,
  })
  const before = cpuSeconds(side.server.pid)
  const result = await closedLoop(side.server.url, settings.clients, seconds, pick, {
    authorization: `Bearer ${side.key}`,
  })
  if (result.failures > 0) throw new Error(`${side.name}: ${result.firstFailures.join('; ')}`)
  return ((cpuSeconds(side.server.pid) - before) * 1e6) / result.requests
}

const sides = [await prepare('base', settings.base || undefined), await prepare('this', undefined)]
try {
  for (const side of sides) await reads(side, 2) // warm-up, not counted
  for (let round = 0; round < settings.rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) side.perRead.push(await reads(side, settings.seconds))
    console.log(
      `round ${round + 1} (load ${loadAverage()}): ${sides.map((s) => `${s.name} ${s.perRead.at(-1)!.toFixed(1)} µs`).join(', ')}`,
    )
  }
  const [base, after] = sides.map((side) => median(side.perRead))
  console.log(
    `server CPU per read, medians of ${settings.rounds} rounds: base ${base!.toFixed(1)} µs, this ${after!.toFixed(1)} µs (${(after! / base!).toFixed(2)}x)`,
  )
} finally {
  for (const side of sides) await side.server.stop()
}
