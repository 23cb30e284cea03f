import { pino, type Logger } from 'pino'
import pinoPretty from 'pino-pretty'
import type { Config } from '../config/schema.js'

/** Whether log lines are for people (a terminal) or for a collector (one JSON object a line). */
export function prettyLogs(format: Config['logFormat'], stdoutIsTerminal: boolean): boolean {
  return format === 'pretty' || (format === 'auto' && stdoutIsTerminal)
}

/**
 * The server's logger. Pretty lines are formatted in this thread and written synchronously, as
 * JSON lines are: a worker-thread transport would write them whenever it gets to them, in the
 * middle of the start banner (docs/production.md, "Logs").
 */
export function serverLogger(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  stdoutIsTerminal = process.stdout.isTTY === true,
): Logger {
  if (!prettyLogs(config.logFormat, stdoutIsTerminal)) return pino({ level: config.logLevel })
  return pino(
    { level: config.logLevel },
    pinoPretty({
      sync: true,
      destination: 1,
      colorize: stdoutIsTerminal,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    }),
  )
}
