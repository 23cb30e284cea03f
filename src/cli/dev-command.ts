import { existsSync, readFileSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'
import { InvalidArgumentError, type Command } from 'commander'
import { collect, parseEnvPairs } from './client-options.js'
import { installHint, missingPackageOf } from './dev-hints.js'
import { DevSession, type DevPlatform } from './dev-session.js'
import {
  HANDLER_EXTENSIONS,
  handlerKind,
  TEST_INPUT_FILE,
  workerCommand,
  workerEnv,
} from './dev-worker.js'

/** The flags of `podyard dev` that shape the platform it starts (main.ts starts it). */
export interface DevPlatformFlags {
  config?: string
  dataDir?: string
  host?: string
  port?: string
  logLevel?: string
}

export interface DevDeps {
  startDevPlatform(flags: DevPlatformFlags): Promise<DevPlatform>
  /** Resolves on Ctrl-C (SIGINT) or SIGTERM, with the signal's name. */
  waitForStop(): Promise<string>
  print(text: string): void
  progress(text: string): void
}

interface DevFlags extends DevPlatformFlags {
  python?: string
  watch?: boolean
  input?: string
  concurrency?: number
  workers: number
  env: string[]
  json?: boolean
}

const positiveInt = (flag: string) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new InvalidArgumentError(`${flag} must be a positive integer`)
  }
  return Number(value)
}

/** The job of `--input`, else of test_input.json beside the handler; `{"input": ...}` either way. */
export function testJobOf(
  file: string,
  input: string | undefined,
): { from: string; body: Record<string, unknown> } | undefined {
  const besideHandler = path.join(path.dirname(file), TEST_INPUT_FILE)
  const from = input !== undefined ? '--input' : TEST_INPUT_FILE
  let text: string
  if (input !== undefined) text = input
  else if (existsSync(besideHandler)) text = readFileSync(besideHandler, 'utf8')
  else return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    throw new InvalidArgumentError(`${from} is not JSON: ${(error as Error).message}`)
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    Array.isArray(parsed) ||
    !('input' in parsed)
  ) {
    throw new InvalidArgumentError(`${from} must be a job such as {"input": {...}}`)
  }
  return { from, body: parsed as Record<string, unknown> }
}

/** tsx's loader for `node --import`, from podyard's own dependencies. */
const tsxLoader = (): string => import.meta.resolve('tsx')

/**
 * The preload of Node.js handlers: dist/cli/dev-node-preload.js, or (podyard run from its
 * sources through tsx, whose resolution finds the .ts for a .js) src/cli/dev-node-preload.ts.
 */
function nodePreload(): string {
  return import.meta.resolve('./dev-node-preload.js')
}

export function addDevCommand(program: Command, deps: DevDeps): void {
  program
    .command('dev')
    .description(
      'serve a handler file (handler.py, handler.ts, handler.js) as an endpoint on this machine; restarts its worker on change',
    )
    .argument('<handler>', `the handler file (${HANDLER_EXTENSIONS.join(', ')})`)
    .option('--python <path>', 'the Python interpreter for .py handlers (default python3 on PATH)')
    .option('--watch', "restart on any change in the handler's folder, not only the file")
    .option('--input <json>', `a job to run once at start (default ./${TEST_INPUT_FILE} beside it)`)
    .option(
      '--concurrency <n>',
      'jobs per worker (PODYARD_WORKER_CONCURRENCY)',
      positiveInt('--concurrency'),
    )
    .option('--workers <n>', 'workers running the handler', positiveInt('--workers'), 1)
    .option(
      '--env <NAME=value>',
      "a variable of the handler's environment (repeatable)",
      collect,
      [] as string[],
    )
    .option('-p, --port <port>', 'listen port (default 8000; 0 picks a free one)')
    .option('--host <host>', 'listen address (default 127.0.0.1)')
    .option(
      '--data-dir <dir>',
      'keep the platform here (default: a throwaway one, removed on exit)',
    )
    .option('-c, --config <file>', 'configuration file (default ./podyard.yaml if present)')
    .option('--log-level <level>', "the platform's log level (default error)")
    .option('--json', 'print JSON lines (ready, test job) on stdout; worker output on stderr')
    .action(async (handler: string, flags: DevFlags) => {
      const file = path.resolve(handler)
      if (!existsSync(file) || !statSync(file).isFile()) {
        throw new InvalidArgumentError(`${handler}: no such file`)
      }
      const kind = handlerKind(file)
      if (kind === undefined) {
        throw new InvalidArgumentError(
          `${handler}: not a handler file podyard dev runs (${HANDLER_EXTENSIONS.join(', ')})`,
        )
      }
      let userEnv: Record<string, string>
      try {
        userEnv = parseEnvPairs(flags.env)
      } catch (error) {
        throw new InvalidArgumentError((error as Error).message)
      }
      const testJob = testJobOf(file, flags.input)
      const python = flags.python ?? 'python3'
      const command = workerCommand({
        file,
        kind,
        python,
        node: process.execPath,
        tsxLoader: tsxLoader(),
        nodePreload: nodePreload(),
      })
      const env = workerEnv({
        kind,
        concurrency: flags.concurrency,
        userEnv,
        devEnv: process.env,
        home: homedir(),
      })
      // From here on Ctrl-C is ours: one that comes while the platform starts stops it once up.
      const stopped = deps.waitForStop()
      const platform = await deps.startDevPlatform({
        ...(flags.config !== undefined ? { config: flags.config } : {}),
        ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
        ...(flags.host !== undefined ? { host: flags.host } : {}),
        ...(flags.port !== undefined ? { port: flags.port } : {}),
        ...(flags.logLevel !== undefined ? { logLevel: flags.logLevel } : {}),
      })
      const session = new DevSession(platform, {
        file,
        command,
        env,
        workers: flags.workers,
        concurrency: flags.concurrency,
        watchFolder: flags.watch ?? false,
        json: flags.json ?? false,
        testJob,
        hint: (line) => {
          const missing = missingPackageOf(kind, line)
          return missing === undefined ? undefined : installHint({ file, kind, python }, missing)
        },
        print: deps.print,
        progress: deps.progress,
      })
      try {
        await Promise.race([session.start(), stopped])
        const signal = await stopped
        deps.progress(`podyard dev: ${signal}: stopping the worker(s) and the platform`)
      } finally {
        await session.close()
        await platform.stop()
      }
      deps.progress('podyard dev: stopped; nothing it started is left running')
    })
}
