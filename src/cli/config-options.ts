import type { Command } from 'commander'

/** Flags that feed the configuration layers (flag > env > file > defaults). */
export interface ConfigFlags {
  config?: string
  host?: string
  port?: string
  dataDir?: string
  storeUrl?: string
  fleet?: string
  driver?: string
  logLevel?: string
  /** `serve`: the separate /metrics listener (config `metrics.listen`). */
  metricsListen?: string
  /** Store commands: create the database when there is none (docs/cli.md, "Store commands"). */
  init?: boolean
}

/**
 * The flags of the configuration layers (flag > env > file > defaults); `withServer` adds the
 * server's (listen address, fleet, driver), and the store commands get `--init` instead.
 */
export function addConfigOptions(command: Command, withServer: boolean): Command {
  command
    .option('-c, --config <file>', 'configuration file (default ./podyard.yaml if present)')
    .option('--data-dir <dir>', 'data directory (default ./.podyard)')
    .option(
      '--store-url <url>',
      'sqlite:<file> or postgres://... (default sqlite:<data-dir>/podyard.db)',
    )
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent')
  if (withServer) {
    command
      .option('--host <host>', 'listen address (default 127.0.0.1)')
      .option('-p, --port <port>', 'listen port (default 8080)')
      .option('--fleet <fleet>', 'demo, none, or a fleet file (default demo)')
      .option(
        '--driver <driver>',
        "the local host's runtime driver: process or docker (default process)",
      )
      .option(
        '--metrics-listen <host:port>',
        'also serve /metrics without a key on this address, for Prometheus (default none)',
      )
  } else {
    command.option('--init', 'create the database when there is none (else: refused)')
  }
  return command
}
