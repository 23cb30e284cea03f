/**
 * A serverless worker's cold start with and without its image pulled ahead of time
 * (bench/README.md, "bench/images"; docs/fleet.md, "Images ahead of time"). A server with the
 * docker driver on this machine's engine (child process, fresh SQLite data directory), a
 * registry on 127.0.0.1 serving the test worker image (node and the worker SDK,
 * test/support/worker-image.ts) behind basic auth, and a second account (role user) that owns the
 * endpoints. For each round, two fresh endpoints (workers min 0, max 1) of that image:
 *
 * - `pre-pulled`: created, its image PRESENT on the host (the platform pulled it ahead of time),
 *   then one /runsync: the time from the request to its answer is the cold start;
 * - `pulled at start`: the same, but the image is removed from the engine before the job, so the
 *   worker's start pulls it from the registry first.
 *
 * Prints each round and the medians. Needs a Docker engine (PODYARD_TEST_DOCKER's) and dist/
 * (the worker SDK of the image). Options: --rounds=3 --blob-delay-ms=0 (holds each blob back
 * in the registry: a slower registry, as across a data center's link).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { startFakeRegistry } from '../../test/support/fake-registry.js'
import { WORKER_IMAGE_CONFIG, workerImageTar } from '../../test/support/worker-image.js'
import { BENCH_ADMIN_KEY, startBenchServer, type BenchServer } from '../bench-server.js'
import { loadAverage, sleep } from '../fleet/load.js'

function option(name: string, fallback: string): string {
  const prefix = `--${name}=`
  const found = process.argv.find((arg) => arg.startsWith(prefix))
  return found ? found.slice(prefix.length) : fallback
}

const rounds = Number(option('rounds', '3'))
const blobDelayMs = Number(option('blob-delay-ms', '0'))
/** Every wait of the bench is bounded. */
const WAIT_MS = 180_000

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

async function call(
  server: BenchServer,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  return { status: response.status, json: text ? JSON.parse(text) : null }
}

function dockerAvailable(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/**
 * The worker image's layer with a file of this run's own: the test suites load the same layer
 * into the engine, and a pull would find it there ("Already exists") and download nothing.
 */
function uniqueLayer(tar: Buffer): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-bench-images-'))
  try {
    const file = path.join(dir, 'layer.tar')
    writeFileSync(file, tar)
    writeFileSync(path.join(dir, 'bench-run'), `${process.pid} ${Date.now()}\n`)
    execFileSync('tar', ['-rf', file, '-C', dir, 'bench-run'])
    return readFileSync(file)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  if (!dockerAvailable()) {
    console.log('images: not measured (no Docker engine answers `docker info`)')
    return
  }
  const tar = uniqueLayer(workerImageTar().tar)
  const registry = await startFakeRegistry({
    image: { repository: `podyard-bench/worker-${process.pid}`, tar, config: WORKER_IMAGE_CONFIG },
    ...(blobDelayMs > 0 ? { blobDelayMs } : {}),
  })
  // The tag alone is not enough: a container of the image (a deleted endpoint's worker being
  // stopped) keeps its layers, and a pull would then only fetch the manifest.
  const removeImage = async () => {
    let id: string
    try {
      id = execFileSync('docker', ['image', 'inspect', '-f', '{{.Id}}', registry.image], {
        stdio: ['ignore', 'pipe', 'ignore'],
      })
        .toString()
        .trim()
    } catch {
      return
    }
    const deadline = Date.now() + WAIT_MS
    while (
      execFileSync('docker', ['ps', '-aq', '--filter', `ancestor=${id}`])
        .toString()
        .trim() !== ''
    ) {
      if (Date.now() > deadline) throw new Error(`containers of ${registry.image} never went`)
      await sleep(200)
    }
    execFileSync('docker', ['image', 'rm', '-f', id], { stdio: 'ignore' })
  }
  const server = await startBenchServer({
    name: 'images',
    env: () => ({
      PODYARD_DRIVER: 'docker',
      PODYARD_FLEET: 'none',
      PODYARD_CONTAINMENT_ACCEPT_UNENFORCED: 'disk',
    }),
  })
  try {
    const member = await call(server, BENCH_ADMIN_KEY, 'POST', '/v2/admin/accounts', {
      email: 'bench-images@example.com',
    })
    if (member.status !== 201) throw new Error(`account: ${member.status}`)
    const key = member.json.apiKey.key as string
    const auth = await call(server, key, 'POST', '/v2/registries', {
      name: 'bench-registry',
      username: registry.username,
      password: registry.password,
    })
    if (auth.status !== 201) throw new Error(`registry auth: ${auth.status}`)

    const coldStart = async (name: string, prePulled: boolean): Promise<number> => {
      await removeImage()
      const created = await call(server, key, 'POST', '/v2/serverless', {
        name,
        image: registry.image,
        registry: auth.json.id,
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        workers: { min: 0, max: 1 },
      })
      if (created.status !== 201) throw new Error(`endpoint: ${created.status}`)
      const id = created.json.id as string
      const deadline = Date.now() + WAIT_MS
      for (;;) {
        const view = await call(server, key, 'GET', `/v2/serverless/${id}`)
        const rows: Array<{ state: string }> = view.json.imageReadiness ?? []
        if (rows.length > 0 && rows.every((r) => r.state === 'PRESENT')) break
        if (Date.now() > deadline) throw new Error(`image never ready: ${JSON.stringify(rows)}`)
        await sleep(100)
      }
      if (!prePulled) await removeImage()
      const started = performance.now()
      const job = await call(server, key, 'POST', `/v2/${id}/runsync?wait=${WAIT_MS}`, {
        input: { echo: name },
      })
      const ms = performance.now() - started
      if (job.json?.status !== 'COMPLETED') throw new Error(`job: ${JSON.stringify(job.json)}`)
      await call(server, key, 'DELETE', `/v2/serverless/${id}`)
      return ms
    }

    const figures: Record<string, number[]> = { 'pre-pulled': [], 'pulled at start': [] }
    for (let round = 1; round <= rounds; round += 1) {
      const pre = await coldStart(`pre-${round}`, true)
      const pulled = await coldStart(`pulled-${round}`, false)
      figures['pre-pulled']!.push(pre)
      figures['pulled at start']!.push(pulled)
      console.log(
        `round ${round}: cold start ${pre.toFixed(0)} ms with the image pre-pulled, ${pulled.toFixed(0)} ms pulling it at start (load ${loadAverage()})`,
      )
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!
    const pre = median(figures['pre-pulled']!)
    const pulled = median(figures['pulled at start']!)
    console.log('\n| figure | measured (median) |')
    console.log('|---|---|')
    console.log(`| cold start, image pre-pulled | ${pre.toFixed(0)} ms |`)
    console.log(`| cold start, image pulled at start | ${pulled.toFixed(0)} ms |`)
    console.log(`| pull's share of the cold start | ${(pulled - pre).toFixed(0)} ms |`)
  } finally {
    // Before the server stops: it stops the last endpoint's worker (workloads outlive a server).
    await removeImage().catch((error: unknown) => console.log(`cleanup: ${String(error)}`))
    await server.stop()
    await registry.close()
  }
}

await main()
