import { createRequire } from 'node:module'
import { pino, type Logger } from 'pino'
import type PinoPretty from 'pino-pretty'
import type { Config } from '../config/schema.js'

/** Whether log lines are for people (a terminal) or for a collector (one JSON object a line). */
export function prettyLogs(format: Config['logFormat'], stdoutIsTerminal: boolean): boolean {
  return format === 'pretty' || (format === 'auto' && stdoutIsTerminal)
}

/**
 * Whether pretty lines are coloured: on a terminal, unless the environment says no colour
 * (`NO_COLOR` set and not empty, as no-color.org has it, or `TERM=dumb`).
 */
export function colourLogs(isTerminal: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return isTerminal && !env.NO_COLOR && env.TERM !== 'dumb'
}

/**
 * The server's logger. Lines are written synchronously, JSON or pretty (formatted in this thread,
 * not a worker's): written later, they would land in the middle of the start banner, which
 * main.ts prints once the server is up (docs/production.md, "Logs").
 */
export function serverLogger(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  fd: 1 | 2 = 1,
  stdoutIsTerminal = (fd === 1 ? process.stdout : process.stderr).isTTY === true,
): Logger {
  if (!prettyLogs(config.logFormat, stdoutIsTerminal)) {
    return pino({ level: config.logLevel }, pino.destination({ dest: fd, sync: true }))
  }
  // Loaded for a terminal only (about 40 ms of a start): JSON lines need none of it.
  const pinoPretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty
  return pino(
    { level: config.logLevel },
    pinoPretty({
      sync: true,
      destination: fd,
      colorize: colourLogs(stdoutIsTerminal),
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    }),
  )
}
