/**
 * `/runsync` through `podyard dev examples/echo-worker.ts` (bench/README.md): the third way a
 * user runs a TS worker. `podyard dev` runs the platform in its own process (SQLite in a
 * throwaway directory, its own key and endpoint) and the handler's worker as a process of it,
 * so the bench starts it as a user does, reads its `--json` ready line, and times sequential
 * `/runsync` calls with the key it printed.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fmt, percentile, root, timeRunsync, writeBenchConfig } from './bench-server.js'

interface DevReady {
  jobApiUrl: string
  apiKey: string
}

const READY_TIMEOUT_MS = 60_000

export async function devRunsync(count: number, warmup: number): Promise<number[]> {
  // The bench's job API limits, as a user would raise them (`--config`).
  const configDir = mkdtempSync(path.join(tmpdir(), 'podyard-bench-dev-'))
  const child = spawn(
    process.execPath,
    [
      path.join(root, 'bin', 'podyard.js'),
      'dev',
      path.join(root, 'examples', 'echo-worker.ts'),
      '--port',
      '0',
      '--json',
      '--config',
      writeBenchConfig(configDir),
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const stderr: string[] = []
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < 200) stderr.push(chunk)
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  try {
    const ready = await new Promise<DevReady>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`podyard dev was not ready in ${READY_TIMEOUT_MS} ms`)),
        READY_TIMEOUT_MS,
      )
      createInterface({ input: child.stdout }).on('line', (line) => {
        const parsed = JSON.parse(line) as { ready?: DevReady }
        if (parsed.ready) {
          clearTimeout(timer)
          resolve(parsed.ready)
        }
      })
      void exited.then((code) => {
        clearTimeout(timer)
        reject(new Error(`podyard dev exited with ${code}: ${stderr.join('')}`))
      })
    })
    const durations = await timeRunsync(
      ready.jobApiUrl,
      count,
      warmup,
      { input: { text: 'hello' } },
      ready.apiKey,
    )
    console.log(
      `\n/runsync through \`podyard dev examples/echo-worker.ts\` (${count} sequential, after ${warmup})`,
    )
    console.log(
      `  round trip: p50 ${fmt(percentile(durations, 50))}, p99 ${fmt(percentile(durations, 99))}, ` +
        `max ${fmt(durations.at(-1) ?? Number.NaN)}`,
    )
    return durations
  } finally {
    // Ctrl-C, as a user stops it: it stops its worker and removes its data directory.
    child.kill('SIGINT')
    await exited
    rmSync(configDir, { recursive: true, force: true })
  }
}
