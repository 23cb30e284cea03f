/**
 * The platform `podyard dev` starts (docs/dev.md), composed beside main.ts: it takes
 * startPlatform from main.ts, which alone loads platform.ts.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { DevPlatformFlags } from './cli/dev-command.js'
import type { DevPlatform } from './cli/dev-session.js'
import { loadConfig } from './config/load-config.js'
import type { Config } from './config/schema.js'

/**
 * runpod-python's `--rp_serve_api` port, and not `serve`'s 8080: a `podyard serve` running
 * beside it is left alone.
 */
export const DEV_DEFAULT_PORT = 8000

/** What of platform.ts's Platform dev needs (only main.ts may import platform.ts). */
interface StartedPlatform {
  url: string
  closeWithWorkloads(): Promise<void>
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
export async function startDevPlatform(
  flags: DevPlatformFlags,
  startPlatform: (config: Config, options: { logTo: 'stderr' }) => Promise<StartedPlatform>,
): Promise<DevPlatform> {
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
      flags: {
        host: flags.host,
        port: flags.port ?? String(DEV_DEFAULT_PORT),
        dataDir,
        logLevel: flags.logLevel,
      },
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
      // Webhooks may go to receivers on this machine (a developer's test server); the egress
      // policy refuses loopback addresses otherwise (docs/security.md, "Egress policy").
      webhooks: {
        ...base.webhooks,
        allowInternal: [...base.webhooks.allowInternal, '127.0.0.0/8', '::1'],
      },
    }
    const running = await startPlatform(config, { logTo: 'stderr' })
    return {
      url: running.url,
      apiKey,
      dataDir,
      throwaway,
      stop: async () => {
        try {
          await running.closeWithWorkloads()
        } finally {
          removeThrowaway()
        }
      },
    }
  } catch (error) {
    removeThrowaway()
    throw error
  }
}
