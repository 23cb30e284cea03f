import type { Command } from 'commander'
import { ApiClient } from '../client/api-client.js'

export interface ClientFlags {
  /** Absent: $PODYARD_URL, else DEFAULT_SERVER_URL. */
  url?: string
  apiKey?: string
  json?: boolean
}

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:8080'

/**
 * `--url`, `--api-key` and `--json`, for commands that talk to a running server. The
 * environment's values are read when the command runs (clientFrom), never given to commander
 * as defaults: commander prints defaults in every `--help` and after every usage error, which
 * would show the API key (or a URL with a password in it) to whoever reads the terminal.
 */
export function withClientOptions(command: Command): Command {
  return command
    .option('--url <url>', `server base URL (default $PODYARD_URL, else ${DEFAULT_SERVER_URL})`)
    .option('--api-key <key>', 'API key (default $PODYARD_API_KEY)')
    .option('--json', 'print JSON')
}

export function clientFrom(flags: ClientFlags): ApiClient {
  return new ApiClient(
    flags.url ?? (process.env.PODYARD_URL || DEFAULT_SERVER_URL),
    flags.apiKey ?? (process.env.PODYARD_API_KEY || undefined),
  )
}

/** For repeatable options: `--port 80/http --port 22/tcp`. */
export const collect = (value: string, previous: string[]): string[] => [...previous, value]

/** `NAME=value` pairs into an object; a pair without `=` is an error naming the flag. */
export function parseEnvPairs(pairs: string[]): Record<string, string> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=')
      if (at <= 0) throw new Error(`--env: "${pair}" is not NAME=value`)
      return [pair.slice(0, at), pair.slice(at + 1)]
    }),
  )
}

/** The container block's flags, shared by `pods create`, `templates create` and `endpoints create`. */
export interface ContainerFlags {
  args?: string
  disk?: number
  port: string[]
  env: string[]
  registry?: string
}

export function withContainerOptions(command: Command): Command {
  return command
    .option('--args <command>', 'command, run through /bin/sh -c')
    .option('--disk <gb>', 'container disk, GB', (v) => Number(v))
    .option(
      '--port <port/protocol>',
      'declared port, e.g. 8888/http (repeatable)',
      collect,
      [] as string[],
    )
    .option('--env <NAME=value>', 'environment variable (repeatable)', collect, [] as string[])
    .option('--registry <id>', 'registry credential for a private image')
}

/** The container block of a request body: only the flags that were given. */
export function containerBody(flags: ContainerFlags) {
  return {
    ...(flags.args !== undefined ? { args: flags.args } : {}),
    ...(flags.disk !== undefined ? { disk: flags.disk } : {}),
    ...(flags.port.length > 0 ? { ports: flags.port } : {}),
    ...(flags.env.length > 0 ? { env: parseEnvPairs(flags.env) } : {}),
    ...(flags.registry ? { registry: flags.registry } : {}),
  }
}
