/**
 * The server's OpenAPI document, as `/v2/openapi.json` serves it: a platform with the default
 * configuration is started in a temporary directory (its own SQLite file, a free port on
 * loopback), asked for its document and stopped. The console's typed client is generated from
 * this at every build, so a route whose schema changes in a way the console does not follow
 * fails the build (docs/console.md).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { loadConfig } from '../../src/config/load-config.js'
import { startPlatform } from '../../src/platform.js'

export async function openapiDocument(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-openapi-'))
  try {
    const config = {
      ...loadConfig({ cwd: dataDir, env: {}, flags: {} }),
      host: '127.0.0.1',
      port: 0,
      logLevel: 'silent',
    }
    const platform = await startPlatform(config, { logger: pino({ level: 'silent' }) })
    try {
      const response = await fetch(`${platform.url}/v2/openapi.json`)
      if (!response.ok) throw new Error(`/v2/openapi.json answered ${response.status}`)
      return (await response.json()) as Record<string, unknown>
    } finally {
      await platform.close()
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}
