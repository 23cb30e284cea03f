import { execFile, spawn } from 'node:child_process'
import {
  cpSync,
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
import {
  callJson,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

const run = promisify(execFile)

/**
 * The worker SDK as its own package: a copy of packages/worker outside the
 * checkout installs its own devDependencies and packs (building on prepack); the tarball,
 * installed into an empty folder with nothing else, serves a job of a real platform, runs a
 * local test job, and type-checks in a project without @types/node.
 */
describe('@podyard/worker from npm pack, alone in an empty folder', () => {
  let dir: string
  let app: string
  let platform: TestPlatform
  let packedFiles: string[]

  const worker = `
import { serve } from '@podyard/worker'
const worker = serve(
  async (job, context) => {
    if (job.input.fail) throw new Error('asked to fail')
    await context.progress('halfway')
    return { doubled: job.input.n * 2, by: context.workerId }
  },
  process.env.ENDPOINT_URL ? { endpointUrl: process.env.ENDPOINT_URL, logger: null } : {},
)
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)))
`

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-worker-package-'))
    app = path.join(dir, 'app')
    mkdirSync(app)
    // The package's own files, as a clone has them (no dist/, no node_modules/ of the checkout).
    const copy = path.join(dir, 'worker-src')
    const source = path.join(repoRoot, 'packages', 'worker')
    for (const name of ['package.json', 'README.md', 'LICENSE', 'tsconfig.build.json', 'src']) {
      cpSync(path.join(source, name), path.join(copy, name), { recursive: true })
    }
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: copy })
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
      cwd: copy,
    })
    const [packed] = JSON.parse(stdout) as Array<{
      filename: string
      files: Array<{ path: string }>
    }>
    packedFiles = packed!.files.map((file) => file.path)
    writeFileSync(
      path.join(app, 'package.json'),
      JSON.stringify({ name: 'app', private: true, type: 'module' }),
    )
    await run(
      'npm',
      ['install', '--offline', '--no-audit', '--no-fund', path.join(dir, packed!.filename)],
      { cwd: app },
    )
    writeFileSync(path.join(app, 'worker.mjs'), worker)
    platform = await startTestPlatform()
  }, 120_000)

  afterAll(async () => {
    await platform?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('installs with no other package', () => {
    expect(
      readdirSync(path.join(app, 'node_modules')).filter((n) => n !== '.package-lock.json'),
    ).toEqual(['@podyard'])
    expect(readdirSync(path.join(app, 'node_modules', '@podyard'))).toEqual(['worker'])
    const manifest = JSON.parse(
      readFileSync(path.join(app, 'node_modules', '@podyard', 'worker', 'package.json'), 'utf8'),
    ) as Record<string, unknown>
    expect(manifest.name).toBe('@podyard/worker')
    expect(manifest.dependencies).toBeUndefined()
    expect(manifest.peerDependencies).toBeUndefined()
  })

  it('ships its build, sources, LICENSE and publishing metadata, no tests', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'package.json',
        'dist/index.js',
        'dist/index.d.ts',
      ]),
    )
    expect(
      packedFiles.filter((file) => file.includes('.test.') || file.endsWith('.tsbuildinfo')),
    ).toEqual([])
    const manifest = JSON.parse(
      readFileSync(path.join(app, 'node_modules', '@podyard', 'worker', 'package.json'), 'utf8'),
    ) as Record<string, unknown>
    expect(manifest).toMatchObject({
      license: 'Apache-2.0',
      publishConfig: { access: 'public' },
    })
  })

  it('serves a job of a real endpoint', async () => {
    const created = await callJson(platform, '/v2/serverless', {
      method: 'POST',
      json: { name: 'packaged', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    expect(created.status).toBe(201)
    const id = created.body.id as string
    const child = spawn(process.execPath, ['worker.mjs'], {
      cwd: app,
      env: {
        PATH: process.env.PATH,
        ENDPOINT_URL: `${platform.url}/v2/${id}`,
        RUNPOD_AI_API_KEY: TEST_ADMIN_KEY,
      },
      stdio: 'inherit',
    })
    const exited = new Promise((resolve) => child.on('close', resolve))
    try {
      const result = await callJson(platform, `/v2/${id}/runsync?wait=20000`, {
        method: 'POST',
        json: { input: { n: 21 } },
      })
      expect(result.body).toMatchObject({ status: 'COMPLETED', output: { doubled: 42 } })
    } finally {
      child.kill('SIGTERM')
      await exited
    }
  })

  it('runs one job locally with --test_input, and test_input.json without a server', async () => {
    const local = await run(process.execPath, ['worker.mjs', '--test_input', '{"input":{"n":4}}'], {
      cwd: app,
      env: { PATH: process.env.PATH },
    })
    expect(JSON.parse(local.stdout.trim())).toMatchObject({
      id: 'local_test',
      status: 'COMPLETED',
      output: { doubled: 8, by: 'local' },
    })
    expect(local.stderr).toContain('progress: "halfway"')

    writeFileSync(path.join(app, 'test_input.json'), '{"id":"from-file","input":{"fail":true}}')
    const failed = await run(process.execPath, ['worker.mjs'], {
      cwd: app,
      env: { PATH: process.env.PATH },
    }).catch((error: { code: number; stdout: string }) => error)
    rmSync(path.join(app, 'test_input.json'))
    expect('code' in failed && failed.code).toBe(1)
    expect(JSON.parse(failed.stdout.trim())).toMatchObject({ id: 'from-file', status: 'FAILED' })
  })

  it('is required from CommonJS too (what tsx makes of a .ts file outside a "type": "module" package)', async () => {
    writeFileSync(
      path.join(app, 'worker.cjs'),
      `const { serve } = require('@podyard/worker')
serve((job) => ({ doubled: job.input.n * 2 }))
`,
    )
    const local = await run(process.execPath, ['worker.cjs', '--test_input', '{"input":{"n":3}}'], {
      cwd: app,
      env: { PATH: process.env.PATH },
    })
    expect(JSON.parse(local.stdout.trim())).toMatchObject({
      status: 'COMPLETED',
      output: { doubled: 6 },
    })
  })

  it('type-checks a TypeScript worker against the installed declarations, without @types/node', async () => {
    writeFileSync(
      path.join(app, 'typed.ts'),
      `import { serve, type Handler } from '@podyard/worker'
const handler: Handler<{ n: number }> = async (job, context) => {
  context.signal.throwIfAborted()
  return job.input.n * 2
}
serve(handler, { concurrency: (current: number) => current + 1 })
`,
    )
    const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc')
    const checked = await run(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        // No @types/node anywhere above the app: the SDK's declarations need none.
        'typed.ts',
      ],
      { cwd: app },
    ).then(
      () => 'no errors',
      (error: { stdout: string; stderr: string }) => error.stdout + error.stderr,
    )
    expect(checked).toBe('no errors')
  })
})
