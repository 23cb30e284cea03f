import type { Command } from 'commander'
import { ApiClient } from '../client/api-client.js'
import { unauthorizedHint } from './error-output.js'
import { resolveTarget } from './profiles.js'
import { UsageError } from './usage-error.js'

export interface ClientFlags {
  /** Absent: $PODYARD_URL, else the profile's, else DEFAULT_SERVER_URL. */
  url?: string
  apiKey?: string
  /** The saved profile (docs/cli.md, "Profiles"); absent: $PODYARD_PROFILE, else `default`. */
  profile?: string
  json?: boolean
}

export const DEFAULT_SERVER_URL = 'http://127.0.0.1:8080'

/**
 * `--url`, `--api-key`, `--profile` and `--json`, for commands that talk to a running server.
 * The environment's and the profile's values are read when the command runs (clientFrom),
 * never given to commander as defaults: commander prints defaults in every `--help` and after
 * every usage error, which would show the API key (or a URL with a password in it) to whoever
 * reads the terminal.
 */
export function withClientOptions(command: Command): Command {
  return command
    .option(
      '--url <url>',
      `server base URL (default $PODYARD_URL, else the profile's, else ${DEFAULT_SERVER_URL})`,
    )
    .option('--api-key <key>', "API key (default $PODYARD_API_KEY, else the profile's)")
    .option('--profile <name>', 'a saved profile (podyard config; default $PODYARD_PROFILE)')
    .option('--json', 'print JSON (errors too, on stderr)')
}

export function clientFrom(flags: ClientFlags): ApiClient {
  const target = resolveTarget(flags, process.env, DEFAULT_SERVER_URL)
  return new ApiClient(target.url, target.apiKey, unauthorizedHint(target.apiKeyFrom))
}

/** `-q, --quiet` for commands that create: only the new id is printed (for scripts). */
export function withQuietOption(command: Command): Command {
  return command.option('-q, --quiet', 'print only the id of what was created')
}

/** What a create prints: the JSON with --json, the bare id with --quiet, else `text`. */
export function createdOutput(
  flags: { json?: boolean; quiet?: boolean },
  created: { id: string },
  text: string,
): string {
  if (flags.json) return JSON.stringify(created, null, 2)
  if (flags.quiet) return created.id
  return text
}

/** For repeatable options: `--port 80/http --port 22/tcp`. */
export const collect = (value: string, previous: string[]): string[] => [...previous, value]

/** `NAME=value` pairs into an object; a pair without `=` is an error naming the flag. */
export function parseEnvPairs(pairs: string[]): Record<string, string> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=')
      if (at <= 0) throw new UsageError(`--env: "${pair}" is not NAME=value`)
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
