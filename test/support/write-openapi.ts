/**
 * Writes the OpenAPI document a default server serves (`/v2/openapi.json`) to the file named by
 * the first argument, for `npm run lint:openapi` (docs/development.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { startTestPlatform } from './platform.js'

const target = process.argv[2]
if (!target) throw new Error('usage: tsx test/support/write-openapi.ts <file>')
const platform = await startTestPlatform()
try {
  const document: unknown = await (await platform.call('/v2/openapi.json', { key: null })).json()
  mkdirSync(path.dirname(path.resolve(target)), { recursive: true })
  writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`)
} finally {
  await platform.close()
}
