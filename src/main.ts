/**
 * The CLI entry (`bin/podyard.js`, `npm start`). cli/ parses flags and formats output; the
 * server is composed in platform.ts, the store commands' store in store-root.ts, and the
 * config's schema is read by load-config.ts: each is imported only by the commands that use it,
 * so client commands (`pods`, `catalog`, ...) start fast (the schema's validator alone is about
 * 250 modules) and store commands (`keys`, `migrate`, ...) load no server.
 */
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { errorJson } from './cli/error-output.js'
import { ExitCode, exitCodeOf } from './cli/exit-codes.js'
import { jsonToYaml, outputFormatOf } from './cli/output-format.js'
import { rewriteRunpodctlForms } from './cli/runpodctl-aliases.js'
import { buildProgram, type ConfigFlags } from './cli/program.js'
import { leftRunningMessage } from './cli/serve-shutdown.js'
import type { Config } from './config/schema.js'
import type * as PlatformModule from './platform.js'
import { isAppError } from './shared/app-error.js'
import { systemClock } from './shared/clock.js'
import { StartupRefusal } from './shared/startup-refusal.js'

async function configFromFlags(flags: ConfigFlags): Promise<Readonly<Config>> {
  const { loadConfig } = await import('./config/load-config.js')
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
      metricsListen: flags.metricsListen,
    },
  })
}

/** podyard's version, from its package.json (one level above src/ and dist/). */
const version = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string
  }
).version

let loaded: Promise<typeof PlatformModule> | undefined
const platform = () => (loaded ??= import('./platform.js'))
const storeRoot = () => import('./store-root.js')

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
  // Whether commander printed an error itself (a parse error); one thrown by an action (an
  // InvalidArgumentError of ours) it leaves to run().
  let commanderPrinted = false
  const program = buildProgram({
    version,
    writeError: (text) => {
      commanderPrinted = true
      // With --json, run() reports commander's errors as JSON instead.
      const format = outputFormatOf(argv)
      if (format !== 'json' && format !== 'yaml') process.stderr.write(text)
    },
    print: (text) => process.stdout.write(`${text}\n`),
    progress: (text) => process.stderr.write(`${text}\n`),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    now: () => systemClock.now(),
    serve: async (flags) => {
      const config = await configFromFlags(flags)
      // With --json stdout carries JSON lines only: the log goes to stderr.
      const running = await (
        await platform()
      ).startPlatform(config, flags.json ? { logTo: 'stderr' } : {})
      const shutdown = async (signal: string) => {
        running.app.log.info({ signal }, 'shutting down')
        const left = await running.workloads()
        await running.close()
        if (flags.json) {
          process.stdout.write(`${JSON.stringify({ stopped: { signal, leftRunning: left } })}\n`)
        } else {
          const message = leftRunningMessage(left)
          if (message !== undefined) process.stderr.write(`${message}\n`)
        }
        process.exit(0)
      }
      process.once('SIGTERM', () => void shutdown('SIGTERM'))
      process.once('SIGINT', () => void shutdown('SIGINT'))
      // Printed only once the signal handlers are in place: whoever reads it may stop us at once.
      process.stdout.write(
        flags.json ? `${JSON.stringify({ ready: running.summary })}\n` : running.banner,
      )
      await new Promise(() => {})
    },
    migrate: async (flags) => {
      const config = await configFromFlags(flags)
      const { store, applied } = await (
        await storeRoot()
      ).openMigratedStore(config, undefined, {
        mustExist: !flags.init,
      })
      await store.close()
      return { applied, storeUrl: store.displayUrl }
    },
    withStore: async (flags, use) =>
      (await storeRoot()).withStoreCommands(await configFromFlags(flags), use, {
        init: flags.init ?? false,
      }),
    startDevPlatform: async (flags) =>
      (await import('./dev-platform.js')).startDevPlatform(flags, async (config, options) =>
        (await platform()).startPlatform(config, options),
      ),
    waitForStop,
  })
  program.exitOverride()
  // With --output json (or --json) errors are JSON on stderr; with --output yaml, YAML.
  const format = outputFormatOf(argv)
  const json = format === 'json' || format === 'yaml'
  const fail = (error: unknown, message: string, exitCode: number) => {
    const structured = errorJson(error, message, exitCode)
    process.stderr.write(
      format === 'json'
        ? `${structured}\n`
        : format === 'yaml'
          ? `${jsonToYaml(structured)}\n`
          : `podyard: ${message}\n`,
    )
    return exitCode
  }
  try {
    await program.parseAsync(rewriteRunpodctlForms(argv))
    return 0
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'commander.helpDisplayed' || code === 'commander.version') return 0
    if (code?.startsWith('commander.')) {
      // Unknown commands and options, missing arguments, bad values, a group without its
      // subcommand (commander says 1 for all of them): usage.
      if (!json && commanderPrinted) return ExitCode.usage
      return fail(error, (error as Error).message.replace(/^error: /, ''), ExitCode.usage)
    }
    if (error instanceof StartupRefusal) {
      return fail(error, (error as Error).message, ExitCode.usage)
    }
    return fail(
      error,
      isAppError(error) ? error.detail : (error as Error).message,
      exitCodeOf(error),
    )
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await run(process.argv)
}
