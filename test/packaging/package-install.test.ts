import { execFile, spawn, type ChildProcess } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import { installPackages } from '../support/installed-package.js'

const run = promisify(execFile)

/** An admin key of the right shape, chosen by the test (PODYARD_ADMIN_KEY). */
const ADMIN_KEY = 'pyd_package_test_admin_key_0123456789'

/**
 * podyard as npm packages (test/support/installed-package.ts: both tarballs installed into an
 * empty prefix with nothing but Node.js and npm), used from a folder outside the checkout: the
 * installed `podyard serve` and CLI, and `podyard dev` running a TypeScript handler that
 * imports the installed SDK. Opt-in (PODYARD_TEST_PACKAGE=1, docs/development.md): the
 * install takes minutes.
 */
describe.runIf(process.env.PODYARD_TEST_PACKAGE === '1')('podyard installed from npm pack', () => {
  let dir: string
  let prefix: string
  let podyard: string
  let packedFiles: string[]
  let installed: string
  let tarball: string
  let app: string
  const children: ChildProcess[] = []

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-package-'))
    const packages = await installPackages(dir)
    ;({ prefix, podyard, packedFiles, tarball, app } = packages)
    installed = packages.installOutput
    writeFileSync(
      path.join(app, 'handler.ts'),
      `import { serve, type Handler } from '@podyard/worker'
const handler: Handler<{ n: number }> = (job) => ({
  doubled: job.input.n * 2,
  sdk: import.meta.resolve('@podyard/worker'),
})
serve(handler)
`,
    )
  }, 600_000)

  afterAll(async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return
        const closed = new Promise((done) => child.once('close', done))
        // podyard dev runs in its own process group: stop it as Ctrl-C would.
        process.kill(-child.pid!, 'SIGINT')
        await closed
      }),
    )
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  /** The installed bin, from a folder outside the checkout, in its own process group. */
  function start(args: string[], cwd: string, ready: RegExp) {
    const child = spawn(podyard, args, {
      cwd,
      env: { PATH: process.env.PATH, HOME: dir, PODYARD_ADMIN_KEY: ADMIN_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    children.push(child)
    let output = ''
    return new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${ready}:\n${output}`)), 60_000)
      const collect = (chunk: Buffer) => {
        output += chunk.toString()
        const match = ready.exec(output)
        if (match) {
          clearTimeout(timer)
          resolve(match)
        }
      }
      child.stdout!.on('data', collect)
      child.stderr!.on('data', collect)
      child.on('close', (code) => reject(new Error(`exited with ${code}:\n${output}`)))
    })
  }

  it('packs the build, the console and LICENSE; no tests, source maps or build info', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'bin/podyard.js',
        'dist/main.js',
        'dist/console/index.html',
        'dist/sdk/worker/index.js',
        'dist/sdk/worker/index.d.ts',
      ]),
    )
    const extra = packedFiles.filter(
      (file) => /\.test\.|\.map$|tsbuildinfo/.test(file) || file.startsWith('src/'),
    )
    expect(extra).toEqual([])
  })

  it('installs without building: no build tools among its dependencies', () => {
    const modules = path.join(prefix, 'lib', 'node_modules', 'podyard', 'node_modules')
    expect(existsSync(path.join(modules, 'better-sqlite3'))).toBe(true)
    for (const tool of ['typescript', 'vite', 'vitest']) {
      expect(existsSync(path.join(modules, tool)), `${tool} installed:\n${installed}`).toBe(false)
    }
  })

  it('serves from an empty folder: the API, the console, and a pod created by the installed CLI', async () => {
    const work = path.join(dir, 'work')
    mkdirSync(work)
    const serving = await start(
      ['serve', '--port', '0'],
      work,
      /is serving at (http:\/\/\S+)[\s\S]*Stop with Ctrl-C/,
    )
    const url = serving[1]!
    const page = await fetch(`${url}/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<!doctype html>')

    const cli = (args: string[]) =>
      run(podyard, [...args, '--url', url, '--api-key', ADMIN_KEY], {
        cwd: work,
        env: { PATH: process.env.PATH, HOME: dir },
      })
    const created = await cli([
      'pods',
      'create',
      '--quiet',
      '--name',
      'from-the-package',
      '--image',
      'busybox',
      '--cpu',
      'cpu3c',
      '--vcpus',
      '2',
      '--args',
      'sleep 600',
    ])
    const podId = created.stdout.trim()
    const listed = await cli(['pods', 'list', '--json'])
    expect(JSON.parse(listed.stdout)).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: podId, name: 'from-the-package' })]),
    )
    // A pod outlives its server (a restarted one adopts it): terminated here, or it runs on.
    await cli(['pods', 'terminate', podId])
    await expect
      .poll(async () => (await cli(['pods', 'list', '--json'])).stdout, { timeout: 60_000 })
      .not.toContain(podId)
  })

  it('runs with npx from the tarball in a fresh folder, as the README says', async () => {
    const fresh = path.join(dir, 'npx-here')
    mkdirSync(fresh)
    copyFileSync(path.join(dir, tarball), path.join(fresh, tarball))
    const env = { PATH: process.env.PATH, HOME: process.env.HOME }
    // npx installs the tarball and its dependencies into its cache (better-sqlite3 compiled
    // there unless cached) and runs its bin: no build of podyard.
    const npx = (args: string[]) =>
      run('npx', ['--yes', '--prefer-offline', `./${tarball}`, ...args], {
        cwd: fresh,
        env,
        maxBuffer: 64 * 1024 * 1024,
      })
    const version = await npx(['--version'])
    expect(version.stdout.trim()).toBe(
      (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string })
        .version,
    )
    const help = await npx(['--help'])
    expect(help.stdout).toContain('serve')
    // It wrote nothing into the folder it ran in but what was there.
    expect(readdirSync(fresh)).toEqual([tarball])
  }, 600_000)

  it('podyard dev runs a TypeScript handler with the SDK installed beside it', async () => {
    // The banner's curl snippet: the job URL, then the key.
    const [, jobUrl, apiKey] = await start(
      ['dev', 'handler.ts', '--port', '0'],
      app,
      /curl -s -X POST (\S+)\/runsync[^\n]*\n[^\n]*Bearer ([^']+)'/,
    )
    const response = await fetch(`${jobUrl}/runsync?wait=60000`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: { n: 21 } }),
    })
    const body = (await response.json()) as { status: string; output: { sdk: string } }
    expect(body).toMatchObject({ status: 'COMPLETED', output: { doubled: 42 } })
    // The handler's own copy of the SDK, not the one inside the installed podyard.
    expect(body.output.sdk).toContain(`${app}/node_modules/@podyard/worker/`)
  })
})
