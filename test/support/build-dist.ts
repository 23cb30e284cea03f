import { execFileSync } from 'node:child_process'
import path from 'node:path'

/**
 * CLI suites run the real bin (bin/podyard.js -> dist/), so dist is rebuilt from the current
 * sources once per test run (incremental: only what changed).
 */
export default function buildDist(): void {
  const root = path.resolve(import.meta.dirname, '..', '..')
  execFileSync(
    process.execPath,
    [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  )
}
