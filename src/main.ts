/**
 * The CLI entry (`bin/podyard.js`, `npm start`). cli/ parses flags and formats output; the
 * server and the store are composed in platform.ts, imported only by the commands that use
 * them, so client commands (`pods`, `catalog`, ...) start fast.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { pino } from 'pino'
import type { DevPlatformFlags } from './cli/dev-command.js'
import type { DevPlatform } from './cli/dev-session.js'
import { buildProgram, type ConfigFlags } from './cli/program.js'
import { leftRunningMessage, type LeftRunning } from './cli/serve-shutdown.js'
import { ConfigError, loadConfig } from './config/load-config.js'
import type { Config } from './config/schema.js'
import { POD_LABEL_KIND } from './control/pod-workload.js'
import { WORKER_LABEL_ENDPOINT } from './control/worker-workload.js'
import type * as PlatformModule from './platform.js'
import { isAppError } from './shared/app-error.js'
import { systemClock } from './shared/clock.js'

function configFromFlags(flags: ConfigFlags): Readonly<Config> {
  return loadConfig({
    configFile: flags.config,
    flags: {
      host: flags.host,
      port: flags.port,
      dataDir: flags.dataDir,
      storeUrl: flags.storeUrl,
      fleet: flags.fleet,
      driver: flags.driver,
      logLevel: flags.logLevel,
    },
  })
}

let loaded: Promise<typeof PlatformModule> | undefined
const platform = () => (loaded ??= import('./platform.js'))

/** The workloads a stopping server leaves running (pods and workers outlive it by design). */
async function leftRunning(running: PlatformModule.Platform): Promise<LeftRunning> {
  const left: LeftRunning = { pods: [], workers: [] }
  for (const driver of running.drivers) {
    for (const workload of await driver.list()) {
      if (workload.phase === 'exited') continue
      if (workload.labels[POD_LABEL_KIND] === 'worker') {
        left.workers.push({
          id: workload.id,
          endpointId: workload.labels[WORKER_LABEL_ENDPOINT] ?? '?',
        })
      } else left.pods.push(workload.id)
    }
  }
  return left
}

/**
 * Stops a platform and every workload it started: what `podyard dev` does on Ctrl-C, where the
 * workers are the developer's handler, not workloads to keep (docs/dev.md).
 */
async function stopWithWorkloads(running: PlatformModule.Platform): Promise<void> {
  // The server stops first, then the loops, so that nothing starts a workload after the listing.
  await running.app.close()
  await running.autoscaler.stop()
  await running.lifecycle.stop()
  for (const driver of running.drivers) {
    for (const workload of await driver.list()) await driver.remove(workload.id)
  }
  await running.close()
}

/** The key `podyard dev` prints, kept in its data directory so that a kept one keeps its key. */
function devApiKey(dataDir: string): string {
  const file = path.join(dataDir, 'dev-api-key')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  const key = `pyd_dev_${randomBytes(24).toString('base64url')}`
  writeFileSync(file, `${key}\n`, { mode: 0o600 })
  return key
}

/**
 * The platform of `podyard dev` (docs/dev.md): SQLite in a throwaway (or given) data
 * directory, this machine only, the developer's own account as the admin with a key of its
 * own, workers unsandboxed (the handler is the developer's own code, run as they would run
 * it), and a quicker autoscaler so that a restart shows within a second or two.
 */
async function startDevPlatform(flags: DevPlatformFlags): Promise<DevPlatform> {
  const throwaway = flags.dataDir === undefined
  const dataDir = path.resolve(flags.dataDir ?? mkdtempSync(path.join(tmpdir(), 'podyard-dev-')))
  const removeThrowaway = () => {
    if (throwaway) rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    mkdirSync(dataDir, { recursive: true })
    const apiKey = devApiKey(dataDir)
    const base = loadConfig({
      configFile: flags.config,
      flags: { host: flags.host, port: flags.port, dataDir, logLevel: flags.logLevel },
    })
    const config: Config = {
      ...base,
      dataDir,
      storeUrl: `sqlite:${path.join(dataDir, 'podyard.db')}`,
      fleet: 'none',
      driver: 'process',
      sandbox: 'none',
      adminKey: apiKey,
      logLevel: flags.logLevel === undefined ? 'error' : base.logLevel,
      workers: { ...base.workers, intervalMs: 500, stopGraceMs: 3000, startBackoffMaxMs: 5000 },
    }
    const logger = pino({ level: config.logLevel }, pino.destination(2))
    const running = await (await platform()).startPlatform(config, { logger })
    return {
      url: running.url,
      apiKey,
      dataDir,
      throwaway,
      stop: async () => {
        try {
          await stopWithWorkloads(running)
        } finally {
          removeThrowaway()
        }
      },
    }
  } catch (error) {
    removeThrowaway()
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(
        `${(error as Error).message}: another server listens there; pass --port 0 for a free port`,
      )
    }
    throw error
  }
}

/** Resolves on the first SIGINT or SIGTERM; later ones say that stopping is under way. */
function waitForStop(): Promise<string> {
  return new Promise((resolve) => {
    let stopping = false
    const on = (signal: string) => {
      if (stopping) {
        process.stderr.write(`podyard: ${signal}: still stopping what was started\n`)
        return
      }
      stopping = true
      resolve(signal)
    }
    process.on('SIGINT', () => on('SIGINT'))
    process.on('SIGTERM', () => on('SIGTERM'))
  })
}

/** Runs the CLI; resolves with the exit code. */
export async function run(argv: string[]): Promise<number> {
  const program = buildProgram({
    print: (text) => process.stdout.write(`${text}\n`),
    progress: (text) => process.stderr.write(`${text}\n`),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    now: () => systemClock.now(),
    serve: async (flags) => {
      const config = configFromFlags(flags)
      const running = await (await platform()).startPlatform(config)
      const shutdown = async (signal: string) => {
        running.app.log.info({ signal }, 'shutting down')
        const left = await leftRunning(running)
        await running.close()
        const message = leftRunningMessage(left)
        if (message !== undefined) process.stderr.write(`${message}\n`)
        process.exit(0)
      }
      process.once('SIGTERM', () => void shutdown('SIGTERM'))
      process.once('SIGINT', () => void shutdown('SIGINT'))
      // Printed only once the signal handlers are in place: whoever reads it may stop us at once.
      process.stdout.write(running.banner)
      await new Promise(() => {})
    },
    migrate: async (flags) => {
      const config = configFromFlags(flags)
      const { store, applied } = await (await platform()).openMigratedStore(config)
      await store.close()
      return { applied, storeUrl: store.displayUrl }
    },
    withStore: async (flags, use) =>
      (await platform()).withStoreCommands(configFromFlags(flags), use),
    startDevPlatform,
    waitForStop,
  })
  program.exitOverride()
  try {
    await program.parseAsync(argv)
    return 0
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'commander.helpDisplayed' || code === 'commander.version') return 0
    if (code?.startsWith('commander.')) return (error as { exitCode?: number }).exitCode ?? 2
    if (error instanceof ConfigError || (loaded && (await loaded).isStartupRefusal(error))) {
      process.stderr.write(`podyard: ${(error as Error).message}\n`)
      return 2
    }
    process.stderr.write(
      `podyard: ${isAppError(error) ? error.detail : (error as Error).message}\n`,
    )
    return 1
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await run(process.argv)
}
