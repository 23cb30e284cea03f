/**
 * The fleet benchmark's server (bench/fleet/run-bench.ts starts it as a child process):
 * `podyard serve` as src/main.ts runs it, configured by the same environment variables, with
 * `--record` the hosts that run here get the RecordingDriver instead of the process driver.
 */
import { loadConfig } from '../../src/config/load-config.js'
import { startPlatform } from '../../src/platform.js'
import { RecordingDriver } from './recording-driver.js'

const config = loadConfig({})
const running = await startPlatform(config, {
  ...(process.argv.includes('--record') ? { localDriver: new RecordingDriver() } : {}),
})
const shutdown = async () => {
  await running.close()
  process.exit(0)
}
process.once('SIGTERM', () => void shutdown())
process.once('SIGINT', () => void shutdown())
process.stdout.write(running.banner)
