import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, startServe } from '../support/cli.js'

// What a client command loads: the CLI and its HTTP client, not the server, the store or the
// config's schema (its validator alone is about 250 modules, half of `podyard --version`'s
// start), nor the YAML library and string-width before output needs them (together about a
// third of a client command's start). A module loader hook, given to the CLI's process through
// NODE_OPTIONS, writes every ES module the process loads to a file, and at exit every module
// `require` loaded.
describe('modules a client command loads', () => {
  let dir: string
  let loaded: string

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'podyard-cli-modules-'))
    loaded = path.join(dir, 'loaded.txt')
    await writeFile(
      path.join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  appendFileSync(${JSON.stringify(loaded)}, url + '\\n')
  return next(url, context)
}
`,
    )
    await writeFile(
      path.join(dir, 'register.mjs'),
      `import { appendFileSync } from 'node:fs'
import { createRequire, register } from 'node:module'
register('./hooks.mjs', import.meta.url)
const required = createRequire(import.meta.url).cache
process.on('exit', () => {
  appendFileSync(${JSON.stringify(loaded)}, Object.keys(required).map((file) => 'file://' + file + '\\n').join(''))
})
`,
    )
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  async function modulesOf(args: string[]): Promise<string[]> {
    await rm(loaded, { force: true })
    const result = await runCli(args, {
      NODE_OPTIONS: `--import=${path.join(dir, 'register.mjs')}`,
      PODYARD_URL: 'http://127.0.0.1:1',
      PODYARD_API_KEY: 'pk_client-startup-test-key',
    })
    expect(result.stderr).not.toMatch(/hooks|register\.mjs/)
    return (await readFile(loaded, 'utf8')).trim().split('\n')
  }

  const serverSide =
    /\/dist\/(platform|config\/(schema|load-config)|dev-platform)\.js$|\/node_modules\/(@sinclair\/typebox|fastify|kysely|better-sqlite3|pg)\//

  it.each([[['--version']], [['pods', 'list']], [['catalog', 'gpus']], [['--help']]])(
    'podyard %j loads none of the server, the store or the config schema',
    async (args) => {
      const modules = await modulesOf(args)
      // The hook saw the CLI itself, so an empty list cannot pass.
      expect(modules.some((url) => url.endsWith('/dist/main.js'))).toBe(true)
      expect(modules.filter((url) => serverSide.test(url))).toEqual([])
    },
  )

  const outputOnly = /\/node_modules\/(yaml|string-width)\//

  it.each([[['--version']], [['pods', 'list']], [['config', 'list']]])(
    'podyard %j loads neither the YAML library nor string-width',
    async (args) => {
      expect((await modulesOf(args)).filter((url) => outputOnly.test(url))).toEqual([])
    },
  )

  it('podyard config list -o yaml loads the YAML library, which the check above would see', async () => {
    const modules = await modulesOf(['config', 'list', '-o', 'yaml'])
    expect(modules.some((url) => /\/node_modules\/yaml\//.test(url))).toBe(true)
  })

  // What only a server loads; the serve test below checks that a server does.
  const theServer = /\/dist\/(platform\.js$|api\/|control\/|runtime\/)|\/node_modules\/fastify\//

  it('podyard migrate and keys list load the store and its services, not the server', async () => {
    const dataDir = path.join(dir, 'store-data')
    const server = theServer
    const migrated = await modulesOf(['migrate', '--init', '--data-dir', dataDir])
    expect(migrated.some((url) => url.endsWith('/dist/store/migrate.js'))).toBe(true)
    expect(migrated.filter((url) => server.test(url))).toEqual([])
    const listed = await modulesOf(['keys', 'list', '--data-dir', dataDir])
    expect(listed.some((url) => url.endsWith('/dist/store/api-key-repo.js'))).toBe(true)
    expect(listed.filter((url) => server.test(url))).toEqual([])
  })

  it('podyard serve on the defaults (SQLite, the process driver) loads no Docker client, PostgreSQL driver or log prettifier', async () => {
    await rm(loaded, { force: true })
    const dataDir = path.join(dir, 'serve-data')
    const server = await startServe(['--port', '0', '--data-dir', dataDir, '--log-level', 'warn'], {
      NODE_OPTIONS: `--import=${path.join(dir, 'register.mjs')}`,
      PODYARD_ADMIN_KEY: 'pk_serve-startup-test-admin-key',
    })
    const answer = await fetch(`${server.url}/readyz`)
    server.child.kill('SIGTERM')
    await server.exited.catch(() => undefined)
    expect(answer.status).toBe(200)
    const modules = (await readFile(loaded, 'utf8')).trim().split('\n')
    expect(modules.some((url) => url.endsWith('/dist/platform.js'))).toBe(true)
    expect(modules.filter((url) => theServer.test(url)).length).toBeGreaterThan(100)
    expect(
      modules.filter((url) => /\/node_modules\/(dockerode|ssh2|pg|pino-pretty)\//.test(url)),
    ).toEqual([])
  })

  it('podyard serve --help is a client command too; the check sees the schema where it is read', async () => {
    expect((await modulesOf(['serve', '--help'])).filter((url) => serverSide.test(url))).toEqual([])
    // A command that reads the config (here refused: the flag's value is not a port) loads it:
    // the pattern above matches what it must.
    const modules = await modulesOf(['serve', '--port', 'x'])
    expect(modules.some((url) => /\/dist\/config\/schema\.js$/.test(url))).toBe(true)
  })
})
