import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { BANNER_LAST_LINE, repoRoot } from './cli.js'
import { TEST_ADMIN_KEY } from './platform.js'

/** A `podyard serve` replica as its own process (docs/production.md, "Several replicas"). */
export interface Replica {
  name: string
  child: ChildProcess
  url: string
  exited: Promise<number | null>
  output: () => string
}

/**
 * `podyard serve` from the sources (src/main.ts under tsx), as its own process, once its banner
 * says it serves; `children` collects it, so that the suite can stop every one it started.
 */
export function startReplica(
  name: string,
  env: NodeJS.ProcessEnv,
  children: ChildProcess[],
): Promise<Replica> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(repoRoot, 'src', 'main.ts'), 'serve'],
      { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    children.push(child)
    let output = ''
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)))
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${output}`)), 40_000)
    const collect = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /is serving at (http:\/\/\S+)/.exec(output)
      if (match && output.includes(BANNER_LAST_LINE)) {
        clearTimeout(timer)
        resolve({ name, child, url: match[1]!, exited, output: () => output })
      }
    }
    child.stdout!.on('data', collect)
    child.stderr!.on('data', collect)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited with ${code}:\n${output}`))
    })
  })
}

/** SIGTERMs every replica still running and waits for each to exit. */
export async function stopReplicas(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const closed = new Promise((done) => child.once('close', done))
      child.kill('SIGTERM')
      await closed
    }),
  )
}

/** Whether the replica leads the cluster, from its /metrics. */
export async function leads(replica: Replica): Promise<{ replica: string; leads: boolean }> {
  const metrics = await fetch(`${replica.url}/metrics`, {
    headers: { Authorization: `Bearer ${TEST_ADMIN_KEY}` },
  })
  const text = await metrics.text()
  const match = /^podyard_cluster_leader\{replica="([^"]+)"\} (\d)$/m.exec(text)
  if (!match) throw new Error(`no podyard_cluster_leader in /metrics of ${replica.name}`)
  return { replica: match[1]!, leads: match[2] === '1' }
}
