import { execFile, spawn } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import { alive, processesIn, startDev, type DevBanner } from '../support/dev-process.js'
import { until } from '../support/until.js'
import { startWebhookReceiver } from '../support/webhook-receiver.js'

const run = promisify(execFile)

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON read back from podyard dev
type Json = Record<string, any>

interface JobJson {
  id: string
  status: string
  output?: { greeting: string; pid: number; [name: string]: unknown }
}

async function call(banner: DevBanner, method: string, route: string, body?: unknown) {
  const response = await fetch(`${banner.baseUrl}/v2/${banner.endpointId}/${route}`, {
    method,
    headers: { authorization: `Bearer ${banner.apiKey}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  expect(response.status, await response.clone().text()).toBeLessThan(300)
  return (await response.json()) as JobJson
}

async function finished(banner: DevBanner, id: string): Promise<JobJson> {
  for (;;) {
    const job = await call(banner, 'GET', `status/${id}`)
    if (!['IN_QUEUE', 'IN_PROGRESS'].includes(job.status)) return job
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** The data directory the banner names (a throwaway one is removed on exit). */
const dataDirOf = (stdout: string) => /^ {2}data dir +(\S+)/m.exec(stdout)![1]!

/** The pids the handlers wrote (`pid-<pid>` files in their folder). */
const handlerPids = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.startsWith('pid-'))
    .map((name) => Number(name.slice(4)))

/**
 * `podyard dev <handler>` as a developer runs it: a real child process in its own
 * process group, real workers, Ctrl-C as SIGINT to the group.
 */
describe('podyard dev', () => {
  const dirs: string[] = []
  const tempDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-dev-test-'))
    dirs.push(dir)
    return dir
  }
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it(
    'serves a Python handler speaking the worker protocol: curl, test_input.json, a restart on edit that loses no queued job, Ctrl-C',
    { timeout: 120_000 },
    async () => {
      const dir = tempDir()
      const handler = path.join(dir, 'handler.py')
      copyFileSync(path.join(repoRoot, 'test', 'fixtures', 'dev-handler.py'), handler)
      writeFileSync(path.join(dir, 'test_input.json'), '{"input": {"name": "tester"}}\n')

      const dev = await startDev(['handler.py', '--port', '0', '--env', `TEST_DIR=${dir}`], {
        cwd: dir,
      })
      let code: number | null
      try {
        const { banner } = dev
        expect(banner.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
        expect(banner.openaiBase).toBe(`${banner.baseUrl}/v2/${banner.endpointId}/openai/v1`)
        expect(dev.stdout()).toMatch(new RegExp(`endpoint +${banner.endpointId} \\(handler\\)`))
        expect(banner.python).toContain(`runpod.Endpoint("${banner.endpointId}")`)

        // test_input.json runs once at start, with its timings and result.
        await dev.waitFor(
          /test_input\.json: COMPLETED in [\d.]+ s \(queued [\d.]+ s, ran [\d.]+ s\)\n\{\n {2}"output": \{\n {4}"greeting": "hello, tester"/,
        )
        // The worker's own output, inline, prefixed by its worker id.
        await dev.waitFor(/^[a-z0-9]{14} \| stdlib worker [a-z0-9]{14} is taking jobs/m)

        // The curl snippet, pasted as printed.
        const curled = JSON.parse((await run('sh', ['-c', banner.curl])).stdout) as JobJson
        expect(curled).toMatchObject({ status: 'COMPLETED', output: { greeting: 'hello, tester' } })
        const firstPid = curled.output!.pid

        // A job running and two queued when the file changes: the running one finishes on the
        // old code, the queued ones wait for the restarted worker and see the change.
        const running = await call(banner, 'POST', 'run', { input: { name: 'a', sleep: 3 } })
        for (;;) {
          if ((await call(banner, 'GET', `status/${running.id}`)).status === 'IN_PROGRESS') break
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        const queued = [
          await call(banner, 'POST', 'run', { input: { name: 'b' } }),
          await call(banner, 'POST', 'run', { input: { name: 'c' } }),
        ]
        const mark = dev.stdout().length
        writeFileSync(
          handler,
          readFileSync(handler, 'utf8').replace('GREETING = "hello"', 'GREETING = "howdy"'),
        )
        await dev.waitFor(/handler\.py changed: restarting the worker/, { from: mark })
        const next = await call(banner, 'POST', 'runsync', { input: { name: 'd' } })

        expect((await finished(banner, running.id)).output).toMatchObject({
          greeting: 'hello, a',
          pid: firstPid,
        })
        for (const job of queued) {
          const done = await finished(banner, job.id)
          expect(done.status).toBe('COMPLETED')
          expect(done.output!.greeting).toMatch(/^howdy, [bc]$/)
          expect(done.output!.pid).not.toBe(firstPid)
        }
        expect(next).toMatchObject({ status: 'COMPLETED', output: { greeting: 'howdy, d' } })
      } finally {
        code = await dev.interrupt()
      }
      expect(code).toBe(0)
      expect(dev.stderr()).toContain('podyard dev: stopped; nothing it started is left running')
      const pids = handlerPids(dir)
      expect(pids.length).toBeGreaterThanOrEqual(2)
      expect(pids.filter(alive)).toEqual([])
      expect(processesIn(dir)).toEqual([])
      expect(existsSync(dataDirOf(dev.stdout()))).toBe(false)
    },
  )

  it(
    "prints JSON lines with --json: ready, then the test job; a JavaScript handler, with the folder's own copy of the SDK",
    {
      timeout: 120_000,
    },
    async () => {
      const dir = tempDir()
      // A copy of @podyard/worker installed in the folder wins over podyard's own.
      const own = path.join(dir, 'node_modules', '@podyard', 'worker')
      mkdirSync(own, { recursive: true })
      writeFileSync(
        path.join(own, 'package.json'),
        '{"name": "@podyard/worker", "type": "module", "exports": "./index.js"}',
      )
      const sdk = pathToFileURL(path.join(repoRoot, 'packages', 'worker', 'dist', 'index.js'))
      writeFileSync(
        path.join(own, 'index.js'),
        `export * from '${sdk.href}'\nexport const copy = 'the folder'\n`,
      )
      writeFileSync(
        path.join(dir, 'worker.mjs'),
        `import * as sdk from '@podyard/worker'
const worker = sdk.serve((job) => ({ doubled: job.input.n * 2, copy: sdk.copy ?? 'podyard' }))
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)))
`,
      )
      writeFileSync(path.join(dir, 'test_input.json'), '{"input": {"n": 21}}')
      const child = spawn(
        process.execPath,
        [path.join(repoRoot, 'bin', 'podyard.js'), 'dev', 'worker.mjs', '--port', '0', '--json'],
        { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      )
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
      try {
        const lines = await until(
          'the ready and test job lines',
          async () => stdout.split('\n').filter((line) => line !== ''),
          (found) => found.length >= 2,
          60_000,
        ).catch((error: Error) => {
          throw new Error(`${error.message}\npodyard dev's stderr: ${stderr}`)
        })
        const [ready, testJob] = lines.map((line) => JSON.parse(line) as Json)
        expect(ready!.ready).toMatchObject({
          handler: 'worker.mjs',
          endpointName: 'worker',
          apiKey: expect.stringMatching(/^pyd_dev_/),
          openaiBaseUrl: `${ready!.ready.baseUrl}/v2/${ready!.ready.endpointId}/openai/v1`,
          worker: { workers: 1, concurrency: 1 },
          throwaway: true,
          snippets: { curl: expect.stringContaining('/runsync') },
        })
        expect(testJob!.testJob).toMatchObject({
          from: 'test_input.json',
          status: 'COMPLETED',
          output: { doubled: 42, copy: 'the folder' },
          totalMs: expect.any(Number),
          executionTime: expect.any(Number),
        })

        // Webhooks may go to a receiver on this machine (the egress policy allows loopback here).
        const receiver = await startWebhookReceiver()
        try {
          const { baseUrl, apiKey, endpointId } = ready!.ready as Record<string, string>
          const submitted = await fetch(`${baseUrl}/v2/${endpointId}/run`, {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ input: { n: 5 }, webhook: receiver.url }),
          })
          expect(submitted.status, await submitted.clone().text()).toBe(200)
          await receiver.waitFor(1, 30_000)
          expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({
            status: 'COMPLETED',
            output: { doubled: 10 },
          })
        } finally {
          await receiver.close()
        }
      } finally {
        // Gone already when it failed to start: the failure above is what counts.
        if (child.exitCode === null && child.signalCode === null)
          process.kill(-child.pid!, 'SIGINT')
      }
      expect(await exited).toBe(0)
      expect(processesIn(dir)).toEqual([])
    },
  )

  it(
    'serves a TypeScript handler through tsx: the runpod-sdk snippet, --input, --watch of the folder, --concurrency and --env, Ctrl-C',
    { timeout: 120_000 },
    async () => {
      const dir = tempDir()
      // What `npm install @podyard/worker` leaves in a project, and a client's project beside it.
      mkdirSync(path.join(dir, 'node_modules', '@podyard'), { recursive: true })
      symlinkSync(
        path.join(repoRoot, 'packages', 'worker'),
        path.join(dir, 'node_modules', '@podyard', 'worker'),
      )
      const client = tempDir()
      mkdirSync(path.join(client, 'node_modules'))
      symlinkSync(
        path.join(repoRoot, 'node_modules', 'runpod-sdk'),
        path.join(client, 'node_modules', 'runpod-sdk'),
      )
      writeFileSync(path.join(dir, 'package.json'), '{"type": "module"}\n')
      writeFileSync(path.join(dir, 'greeting.ts'), "export const greeting: string = 'hello'\n")
      writeFileSync(
        path.join(dir, 'handler.ts'),
        `import { writeFileSync } from 'node:fs'
import { serve, type JobContext } from '@podyard/worker'
import { greeting } from './greeting.js'

writeFileSync(\`pid-\${process.pid}\`, '')
const worker = serve(async (job: { input: { name?: string } }, context: JobContext) => {
  await context.progress('started')
  return {
    greeting: \`\${greeting}, \${job.input.name ?? 'world'}\`,
    pid: process.pid,
    concurrency: process.env.PODYARD_WORKER_CONCURRENCY,
    extra: process.env.EXTRA,
  }
})
console.log('typescript worker', worker.workerId, 'is taking jobs')
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)))
`,
      )

      const dataDir = path.join(dir, 'kept-data')
      const dev = await startDev(
        [
          'handler.ts',
          '--port',
          '0',
          '--watch',
          '--concurrency',
          '2',
          '--env',
          'EXTRA=from --env',
          '--input',
          '{"input": {"name": "cli"}}',
          '--data-dir',
          dataDir,
        ],
        { cwd: dir },
      )
      let code: number | null
      try {
        const { banner } = dev
        await dev.waitFor(/--input: COMPLETED in [\d.]+ s[^\n]*\n\{\n {2}"output": \{/)
        expect(dev.stdout()).toContain('"greeting": "hello, cli"')
        await dev.waitFor(/^[a-z0-9]{14} \| typescript worker [a-z0-9]{14} is taking jobs/m)

        // The runpod-sdk snippet, pasted into a module as printed.
        writeFileSync(path.join(client, 'client.mjs'), banner.js)
        const viaSdk = (await run(process.execPath, ['client.mjs'], { cwd: client })).stdout
        expect(viaSdk).toContain("greeting: 'hello, cli'")
        expect(viaSdk).toContain("concurrency: '2'")
        expect(viaSdk).toContain("extra: 'from --env'")

        // --watch: a change to another file of the folder restarts the worker.
        const mark = dev.stdout().length
        writeFileSync(path.join(dir, 'greeting.ts'), "export const greeting: string = 'hi'\n")
        await dev.waitFor(/greeting\.ts changed: restarting the worker/, { from: mark })
        const next = await call(banner, 'POST', 'runsync', { input: { name: 'ts' } })
        expect(next).toMatchObject({ status: 'COMPLETED', output: { greeting: 'hi, ts' } })
      } finally {
        code = await dev.interrupt()
      }
      expect(code).toBe(0)
      const pids = handlerPids(dir)
      expect(pids.length).toBeGreaterThanOrEqual(2)
      expect(pids.filter(alive)).toEqual([])
      expect(processesIn(dir)).toEqual([])
      // A data directory that was given is kept, with its key, for the next run.
      expect(dataDirOf(dev.stdout())).toBe(dataDir)
      expect(readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim()).toBe(dev.banner.apiKey)
    },
  )

  it(
    'serves handlers from folders with nothing installed: handler.ts importing podyard/worker (CommonJS under tsx: no package.json), handler.js importing @podyard/worker; jobs through /runsync with their key',
    { timeout: 120_000 },
    async () => {
      const handlers = {
        'handler.ts': `import { serve, type JobContext } from 'podyard/worker'
const worker = serve((job: { input: { n: number } }, context: JobContext) => ({
  doubled: job.input.n * 2,
  by: context.workerId,
}))
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)))
`,
        'handler.js': `import { serve } from '@podyard/worker'
const worker = serve((job) => ({ doubled: job.input.n * 2, by: 'js' }))
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)))
`,
      }
      for (const [name, source] of Object.entries(handlers)) {
        const dir = tempDir()
        writeFileSync(path.join(dir, name), source)
        const dev = await startDev([name, '--port', '0'], { cwd: dir })
        let code: number | null
        try {
          await dev.waitFor(/^[a-z0-9]{14} \* READY$/m)
          const done = await call(dev.banner, 'POST', 'runsync', { input: { n: 21 } })
          expect(done, dev.stdout()).toMatchObject({
            status: 'COMPLETED',
            output: { doubled: 42 },
          })
        } finally {
          code = await dev.interrupt()
        }
        expect(code).toBe(0)
        expect(dev.stdout()).not.toMatch(/Cannot find|cannot import/)
        expect(readdirSync(dir)).toEqual([name])
        expect(processesIn(dir)).toEqual([])
      }
    },
  )

  it(
    "resolves the worker SDK from a checkout's sources too (tsx src/main.ts)",
    { timeout: 120_000 },
    async () => {
      const dir = tempDir()
      writeFileSync(
        path.join(dir, 'worker.mjs'),
        `import { serve } from '@podyard/worker'
const worker = serve((job) => ({ doubled: job.input.n * 2 }))
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)))
`,
      )
      const dev = await startDev(['worker.mjs', '--port', '0'], { cwd: dir, fromSources: true })
      let code: number | null
      try {
        expect(dev.stdout()).toMatch(/ --import \S+\/src\/cli\/dev-node-preload\.ts worker\.mjs/)
        await dev.waitFor(/^[a-z0-9]{14} \* READY$/m)
        const done = await call(dev.banner, 'POST', 'runsync', { input: { n: 4 } })
        expect(done, dev.stdout()).toMatchObject({ status: 'COMPLETED', output: { doubled: 8 } })
      } finally {
        code = await dev.interrupt()
      }
      expect(code).toBe(0)
      expect(processesIn(dir)).toEqual([])
    },
  )

  it(
    'says once what to install when a handler dies of an import, not at every restart, and the worker starts once it is installed',
    { timeout: 120_000 },
    async () => {
      const unhealthy = (text: string) => text.match(/^[a-z0-9]{14} \* UNHEALTHY/gm)?.length ?? 0

      // Node.js: the package, and the folder to install it in.
      const dir = tempDir()
      writeFileSync(
        path.join(dir, 'handler.mjs'),
        `import { serve } from '@podyard/worker'
import { twice } from 'podyard-test-missing'
const worker = serve((job) => ({ doubled: twice(job.input.n) }))
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)))
`,
      )
      const dev = await startDev(['handler.mjs', '--port', '0'], { cwd: dir })
      let code: number | null
      const hint = `podyard dev: handler.mjs cannot import podyard-test-missing, which is not installed: run \`npm install podyard-test-missing\` in ${dir}; the worker is restarted meanwhile and starts once it is there`
      try {
        await dev.waitFor(/cannot import podyard-test-missing/)
        await until(
          'three failed starts',
          async () => unhealthy(dev.stdout()),
          (n) => n >= 3,
          30_000,
        )
        expect(
          dev
            .stdout()
            .split('\n')
            .filter((line) => line === hint),
        ).toHaveLength(1)

        // What `npm install` would leave: the next restart (no change to the handler) takes it.
        const pkg = path.join(dir, 'node_modules', 'podyard-test-missing')
        mkdirSync(pkg, { recursive: true })
        writeFileSync(
          path.join(pkg, 'package.json'),
          '{"name": "podyard-test-missing", "type": "module", "exports": "./index.js"}',
        )
        writeFileSync(path.join(pkg, 'index.js'), 'export const twice = (n) => n * 2\n')
        const done = await call(dev.banner, 'POST', 'runsync', { input: { n: 5 } })
        expect(done, dev.stdout()).toMatchObject({ status: 'COMPLETED', output: { doubled: 10 } })
        expect(
          dev
            .stdout()
            .split('\n')
            .filter((line) => line === hint),
        ).toHaveLength(1)
      } finally {
        code = await dev.interrupt()
      }
      expect(code).toBe(0)

      // Python: pip, for the interpreter that runs it.
      const pyDir = tempDir()
      writeFileSync(path.join(pyDir, 'handler.py'), 'import podyard_test_missing\n')
      const py = await startDev(['handler.py', '--port', '0'], { cwd: pyDir })
      try {
        await py.waitFor(
          /^podyard dev: handler\.py cannot import podyard_test_missing, which is not installed: run `python3 -m pip install podyard_test_missing` \(the interpreter it runs under; --python picks another\); the worker is restarted meanwhile/m,
        )
        await until(
          'three failed starts',
          async () => unhealthy(py.stdout()),
          (n) => n >= 3,
          30_000,
        )
        expect(py.stdout().match(/cannot import podyard_test_missing/g)).toHaveLength(1)
      } finally {
        code = await py.interrupt()
      }
      expect(code).toBe(0)
      expect(processesIn(pyDir)).toEqual([])
    },
  )
})
