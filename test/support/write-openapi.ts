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
  const response = await platform.call('/v2/openapi.json', { key: null })
  // A failing document answers a problem, which the linter would not recognize as one.
  if (response.status !== 200) {
    throw new Error(`/v2/openapi.json answered ${response.status}: ${await response.text()}`)
  }
  const document: unknown = await response.json()
  mkdirSync(path.dirname(path.resolve(target)), { recursive: true })
  writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`)
} finally {
  await platform.close()
}
