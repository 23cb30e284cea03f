/**
 * The CLI entry (`bin/podyard.js`, `npm start`). cli/ parses flags and formats output; the
 * server and the store are composed in platform.ts, imported only by the commands that use
 * them, so client commands (`pods`, `catalog`, ...) start fast.
 */
import { pathToFileURL } from 'node:url'
import { buildProgram, type ConfigFlags } from './cli/program.js'
import { leftRunningMessage } from './cli/serve-shutdown.js'
import { ConfigError, loadConfig } from './config/load-config.js'
import type { Config } from './config/schema.js'
import { startDevPlatform } from './dev-platform.js'
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
        const left = await running.workloads()
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
      const { store, applied } = await (await platform()).openMigratedStore(config, undefined, {
        mustExist: !flags.init,
      })
      await store.close()
      return { applied, storeUrl: store.displayUrl }
    },
    withStore: async (flags, use) =>
      (await platform()).withStoreCommands(configFromFlags(flags), use, {
        init: flags.init ?? false,
      }),
    startDevPlatform: (flags) =>
      startDevPlatform(flags, async (config, options) =>
        (await platform()).startPlatform(config, options),
      ),
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
