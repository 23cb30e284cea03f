import { execFileSync } from 'node:child_process'
import path from 'node:path'

/**
 * CLI suites run the real bin (bin/podyard.js -> dist/), and worker fixtures the worker SDK's
 * build, so both are rebuilt from the current sources once per test run, as `npm run build`
 * does: the platform (incremental: only what changed; it builds packages/worker/dist first, a
 * project it references), then the SDK package into dist/sdk/worker. Both in build mode, which
 * skips a project whose sources did not change: a run without SDK changes spends under a
 * second here instead of about five.
 */
export default function buildDist(): void {
  const root = path.resolve(import.meta.dirname, '..', '..')
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  for (const args of [
    ['-b', 'tsconfig.build.json'],
    ['-b', 'tsconfig.sdk.json'],
  ]) {
    execFileSync(process.execPath, [tsc, ...args], { cwd: root, stdio: 'inherit' })
  }
}
