/**
 * `npm run build:console` (also part of `npm install`'s prepare): the console's typed API
 * client is generated from the server's own OpenAPI document, the console is type-checked
 * against it, then bundled into dist/console. A route whose schema changes in a way the
 * console does not follow fails here, at build time (docs/console.md).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'
import { checkBundleBudget } from './bundle-budget.js'
import { generateApiTypes } from './generate-api-types.js'
import { openapiDocument } from './openapi-document.js'

const consoleDir = fileURLToPath(new URL('..', import.meta.url))
const generatedDir = path.join(consoleDir, 'src', 'api', 'generated')
const outDir = path.join(consoleDir, '..', 'dist', 'console')

const step = (what: string) => process.stdout.write(`console: ${what}\n`)

step('generating the API types from the OpenAPI document')
const document = await openapiDocument()
mkdirSync(generatedDir, { recursive: true })
writeFileSync(path.join(generatedDir, 'openapi.ts'), await generateApiTypes(document))

step('type-checking against it')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
try {
  execFileSync(process.execPath, [tsc, '-p', path.join(consoleDir, 'tsconfig.json')], {
    stdio: 'inherit',
  })
} catch {
  process.stderr.write(
    "console: the console does not type-check against the server's OpenAPI document (errors above)\n",
  )
  process.exit(1)
}

step('bundling into dist/console')
// React's production build, whoever runs this: vitest's NODE_ENV=test would give the
// development one (twice the size, with its checks).
process.env.NODE_ENV = 'production'
await build({ configFile: path.join(consoleDir, 'vite.config.ts'), logLevel: 'warn' })

const budget = checkBundleBudget(outDir, readFileSync(path.join(outDir, 'index.html'), 'utf8'))
step(`first page ${(budget.gzipBytes / 1024).toFixed(1)} KB gzipped (budget ${budget.limitKb} KB)`)
if (!budget.ok) {
  process.stderr.write(`console: the first page is over its budget: ${budget.files.join(', ')}\n`)
  process.exit(1)
}
