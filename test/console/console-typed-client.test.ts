import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiTypes } from '../../console/scripts/generate-api-types.js'
import { repoRoot } from '../support/cli.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * The console cannot drift from the server: its client's types are generated from
 * the served /v2/openapi.json, so a route whose schema changes under it stops the console from
 * type-checking, which stops `npm run build:console` (and `npm install`). Checked here on a copy
 * of console/src, against the served document as it is and with one field renamed.
 */
const run = promisify(execFile)
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

describe('the console against the served OpenAPI document', { timeout: 240_000 }, () => {
  let platform: TestPlatform
  let document: Record<string, unknown>
  let workDir: string

  beforeAll(async () => {
    platform = await startTestPlatform()
    const response = await fetch(`${platform.url}/v2/openapi.json`)
    expect(response.status).toBe(200)
    document = (await response.json()) as Record<string, unknown>
    // Inside the checkout (an ignored folder), so that the copy finds node_modules.
    mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true })
    workDir = mkdtempSync(path.join(repoRoot, 'test-results', 'console-drift-'))
    cpSync(path.join(repoRoot, 'console', 'src'), path.join(workDir, 'src'), { recursive: true })
    writeFileSync(
      path.join(workDir, 'tsconfig.json'),
      JSON.stringify({
        extends: path.join(repoRoot, 'console', 'tsconfig.json'),
        include: ['src'],
      }),
    )
  })
  afterAll(async () => {
    await platform?.close()
    if (workDir) rmSync(workDir, { recursive: true, force: true })
  })

  /**
   * tsc's verdict on the copied console with the types of `doc`: all of it, or the files under
   * `only` (a folder of src/) and what they import.
   */
  async function typeCheck(
    doc: Record<string, unknown>,
    only?: string,
  ): Promise<{ ok: boolean; output: string }> {
    const generated = path.join(workDir, 'src', 'api', 'generated')
    mkdirSync(generated, { recursive: true })
    writeFileSync(path.join(generated, 'openapi.ts'), await generateApiTypes(doc))
    const project = path.join(workDir, only ? 'tsconfig.part.json' : 'tsconfig.json')
    if (only) {
      writeFileSync(
        project,
        JSON.stringify({ extends: './tsconfig.json', include: [path.join('src', only)] }),
      )
    }
    try {
      await run(process.execPath, [tsc, '-p', project])
      return { ok: true, output: '' }
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string }
      return { ok: false, output: `${stdout}${stderr}` }
    }
  }

  it('type-checks against the document the server serves', async () => {
    const verdict = await typeCheck(document)
    expect(verdict.output).toBe('')
    expect(verdict.ok).toBe(true)
  })

  it('fails to type-check when a field it reads is renamed in a route’s schema', async () => {
    type ObjectSchema = { required: string[]; properties: Record<string, unknown> }
    const changed = structuredClone(document) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>
      components: { schemas: Record<string, ObjectSchema> }
    }
    const answer = (
      changed.paths['/v2/pods/{id}']!.get!.responses['200'] as {
        content: { 'application/json': { schema: ObjectSchema | { $ref: string } } }
      }
    ).content['application/json'].schema
    // The pod is a named component schema ($ref); rename the field where it is defined.
    const schema =
      '$ref' in answer
        ? changed.components.schemas[answer.$ref.replace('#/components/schemas/', '')]!
        : answer
    schema.properties.state = schema.properties.status
    delete schema.properties.status
    schema.required = schema.required.map((name) => (name === 'status' ? 'state' : name))

    // The pod pages read it: checking them (and what they import) is enough to see it break,
    // at about half the CPU of the whole console's check above.
    const verdict = await typeCheck(changed, path.join('pages', 'pods'))
    expect(verdict.ok).toBe(false)
    expect(verdict.output).toMatch(/src\/pages\/pods\/pod-[a-z-]+\.tsx.*'status'/)
  })
})
