/**
 * What GPU sampling costs an idle server (bench/README.md, "bench/gpus"): the server's own CPU
 * (user + system, /proc; the nvidia-smi process is not the server's) over `--seconds` while it
 * samples `--gpus` GPUs once a second, against the same server without GPUs, in one run. The
 * machine has no GPU: a stand-in nvidia-smi on PATH (test/support/fake-nvidia-smi.ts) answers
 * discovery and prints `--gpus` reading lines every `-lms` interval, as nvidia-smi does; the
 * sampler's parsing, the health rules and the GPU board's writes to SQLite are the platform's
 * own. Target (issue text): under 0.5% of a core for 8 GPUs.
 *
 * Options: --gpus=8 --seconds=30
 */
import { rmSync } from 'node:fs'
import { fakeNvidiaSmi } from '../../test/support/fake-nvidia-smi.js'
import { BENCH_ADMIN_KEY, startBenchServer, type BenchServer } from '../bench-server.js'
import { cpuSeconds, loadAverage, sleep } from '../fleet/load.js'

function option(name: string, fallback: string): string {
  const prefix = `--${name}=`
  const found = process.argv.find((arg) => arg.startsWith(prefix))
  return found ? found.slice(prefix.length) : fallback
}

const gpus = Number(option('gpus', '8'))
const seconds = Number(option('seconds', '30'))
const TARGET_PERCENT = 0.5
const H100 = 'NVIDIA H100 80GB HBM3'

/** One --query-gpu line in GPU_QUERY_FIELDS' order: a busy, healthy H100. */
function reading(index: number): string {
  const bus = `00000000:${(0x19 + index).toString(16).toUpperCase().padStart(2, '0')}:00.0`
  const uuid = `GPU-00000000-0000-4000-8000-${String(index).padStart(12, '0')}`
  return `${index}, ${uuid}, ${bus}, 87, 40, 40211, 81559, 61, 512.3, 0x0000000000000001, 0, No`
}

/** The GPUs the local host reports read (sampled at least once). */
async function readGpus(server: BenchServer): Promise<number> {
  const response = await fetch(`${server.url}/v2/admin/hosts/local`, {
    headers: { authorization: `Bearer ${BENCH_ADMIN_KEY}` },
  })
  if (!response.ok) return 0
  const host = (await response.json()) as { gpus?: Array<{ utilPercent: number | null }> }
  return (host.gpus ?? []).filter((g) => g.utilPercent !== null).length
}

/** The server's CPU over `seconds`, as a percentage of one core, after a settling pause. */
async function idleCpu(server: BenchServer): Promise<number> {
  await sleep(3_000)
  const before = cpuSeconds(server.pid)
  await sleep(seconds * 1000)
  return ((cpuSeconds(server.pid) - before) / seconds) * 100
}

async function measure(withGpus: boolean): Promise<number> {
  const smi = withGpus ? fakeNvidiaSmi(Array(gpus).fill(H100), { everyInterval: true }) : null
  smi?.setQuery(`${Array.from({ length: gpus }, (_, i) => reading(i)).join('\n')}\n`)
  const server = await startBenchServer({
    name: withGpus ? 'gpus' : 'no-gpus',
    env: () => ({
      PODYARD_FLEET: 'none',
      PODYARD_SANDBOX: 'none',
      ...(smi ? { PATH: smi.path } : {}),
    }),
  })
  try {
    if (smi) {
      const deadline = Date.now() + 30_000
      while ((await readGpus(server)) < gpus) {
        if (Date.now() > deadline) throw new Error(`the server did not read ${gpus} GPUs in 30 s`)
        await sleep(250)
      }
    }
    return await idleCpu(server)
  } finally {
    await server.stop()
    if (smi) rmSync(smi.dir, { recursive: true, force: true })
  }
}

console.log(
  `GPU sampling bench: ${gpus} stand-in GPUs read every second, ${seconds} s idle per run (load average ${loadAverage()})`,
)
const without = await measure(false)
const withSampling = await measure(true)
const cost = withSampling - without
console.log(`idle server, no GPUs:            ${without.toFixed(2)}% of a core`)
console.log(`idle server, ${gpus} GPUs sampled:     ${withSampling.toFixed(2)}% of a core`)
console.log(
  `GPU sampling's cost:              ${cost.toFixed(2)}% of a core (target < ${TARGET_PERCENT}%: ${cost < TARGET_PERCENT ? 'met' : 'NOT met'}) (load average ${loadAverage()})`,
)
