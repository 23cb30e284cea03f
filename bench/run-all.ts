/**
 * `npm run bench`: every bench of this repository in one invocation (bench/README.md). Runs each
 * `bench/<area>/run-bench.ts` in turn as a child process, in the order of their folder names,
 * passing on this command's arguments, and notes the machine's load average before and after
 * each: the machine may be shared. A bench that fails is reported and the next one still runs;
 * the exit code says whether all passed.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

const benches = readdirSync(here, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => path.join(here, entry.name, 'run-bench.ts'))
  .filter((file) => existsSync(file))
  .sort()

let failed = 0
for (const file of benches) {
  const name = path.relative(path.dirname(here), file)
  console.log(`\n#### ${name} (load average ${loadAverage()})\n`)
  const run = spawnSync(process.execPath, ['--import', 'tsx', file, ...process.argv.slice(2)], {
    stdio: 'inherit',
  })
  if (run.status !== 0) {
    failed += 1
    console.log(`\n#### ${name} failed (exit ${run.status ?? run.signal})`)
  }
}
console.log(
  `\n#### ${benches.length - failed} of ${benches.length} benches ran (load average ${loadAverage()})`,
)
process.exitCode = failed > 0 ? 1 : 0
