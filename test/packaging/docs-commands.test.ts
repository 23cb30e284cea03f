import { spawn, type ChildProcess } from 'node:child_process'
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import {
  allDocsBlocks,
  commandKey,
  expandSynopsis,
  type DocsCommand,
} from '../support/docs-commands.js'
import {
  DOCS_FIXTURE_FILES,
  EXCLUDED,
  EXIT_CODES,
  LONG_RUNNING,
  NEEDS_POSTGRES,
  OUTPUT_NOT_COMPARED,
  placeholdersOf,
  runsAsAdmin,
} from '../support/docs-commands-plan.js'
import { DocsResources, type Caller } from '../support/docs-resources.js'
import { installPackages } from '../support/installed-package.js'
import { removeDataDir } from '../support/processes.js'
import { POSTGRES_URL_ENV } from '../support/stores.js'

/**
 * Every shell command of README.md and docs/*.md, run from a fresh folder outside the checkout
 * against a podyard started as the README starts it (`npm start`): a user's commands as a
 * second, non-admin account, an admin's with the admin key from the banner. A command that
 * cannot run here is in EXCLUDED (test/support/docs-commands-plan.ts) with its reason; one that
 * is in neither fails the test. `podyard` and the SDK are the checkout's, or, with
 * PODYARD_TEST_PACKAGE=1 (CI), both packages packed and installed as a user installs them.
 * Opt-in (PODYARD_TEST_DOCS_COMMANDS=1; .ci/run turns it on): some 200 CLI and curl processes
 * take about a minute. docs/development.md, "Docs commands".
 */
const ENABLED = process.env.PODYARD_TEST_DOCS_COMMANDS === '1'
/** With the package suite (PODYARD_TEST_PACKAGE=1): the commands run the installed package. */
const INSTALLED = process.env.PODYARD_TEST_PACKAGE === '1'
/** Packing and installing both packages takes minutes (better-sqlite3 is compiled). */
const INSTALLED_TIMEOUT_MS = INSTALLED ? 720_000 : 120_000

describe.runIf(ENABLED)('the shell commands of README.md and docs/*.md', () => {
  let dir: string
  let dataDir: string
  let server: ChildProcess
  let url: string
  let banner = ''
  let adminKey: string
  let userKey: string
  let resources: DocsResources
  let binDir: string
  let podyardBin = path.join(repoRoot, 'bin', 'podyard.js')
  let workerSdk = path.join(repoRoot, 'packages', 'worker')

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-docs-commands-'))
    dataDir = path.join(dir, 'data')
    binDir = path.join(dir, 'bin')
    mkdirSync(binDir)
    // `podyard` and the SDK as a user installs them (npm pack, npm install) where the package
    // suite runs; else the checkout's bin (`npx podyard` in the checkout) and SDK.
    if (INSTALLED) {
      const packages = await installPackages(mkdtempSync(path.join(dir, 'packages-')))
      podyardBin = packages.podyard
      workerSdk = path.join(packages.app, 'node_modules', '@podyard', 'worker')
    }
    symlinkSync(podyardBin, path.join(binDir, 'podyard'))
    // The README's first command, less `npm install` (CI's clean clone runs `npm ci`): with
    // its own port and data directory, and no sandbox, as the README's serverless example says.
    server = spawn('npm', ['start', '--silent'], {
      cwd: repoRoot,
      env: {
        ...process.env,
        PODYARD_PORT: '0',
        PODYARD_DATA_DIR: dataDir,
        PODYARD_SANDBOX: 'none',
        PODYARD_LOG_LEVEL: 'warn',
        PODYARD_ADMIN_KEY: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start:\n${banner}`)), 90_000)
      const collect = (chunk: Buffer) => {
        banner += chunk.toString()
        if (banner.includes('Stop with Ctrl-C')) {
          clearTimeout(timer)
          resolve()
        }
      }
      server.stdout!.on('data', collect)
      server.stderr!.on('data', collect)
      server.on('close', (code) => reject(new Error(`npm start exited ${code}:\n${banner}`)))
    })
    url = /is serving at (http:\/\/\S+)/.exec(banner)![1]!
    adminKey = /Admin API key[^\n]*\n\s+(pyd_\S+)/.exec(banner)![1]!
    resources = new DocsResources(url, adminKey, repoRoot)
    userKey = await resources.userKey()
  }, INSTALLED_TIMEOUT_MS)

  afterAll(async () => {
    await resources?.close()
    if (server?.exitCode === null) {
      const closed = new Promise((done) => server.once('close', done))
      process.kill(-server.pid!, 'SIGTERM')
      await closed
    }
    if (dataDir) removeDataDir(dataDir)
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('prints the banner the README shows, line for line', () => {
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8')
    const shown = /prints the admin API key once[^\n]*\n\n```\n([\s\S]*?)```/.exec(readme)![1]!
    // The labels of the banner's lines (REST API, console, store, ...), both ways.
    const labels = (text: string) =>
      [...text.matchAll(/^ {2}([a-z][A-Za-z ]*?) {2,}\S/gm)].map((match) => match[1])
    expect(labels(banner)).toEqual(labels(shown))
    expect(banner).toMatch(/^podyard \S+ is serving at http:\/\/127\.0\.0\.1:\d+$/m)
    expect(banner).toContain('Admin API key (shown once, store it now')
  })

  const blocks = allDocsBlocks()

  it('has each command either run below or excluded with a reason; no stale exclusion', () => {
    const keys = new Set(blocks.flatMap((block) => block.commands.map(commandKey)))
    expect(Object.keys(EXCLUDED).filter((key) => !keys.has(key))).toEqual([])
    expect(Object.keys(LONG_RUNNING).filter((key) => !keys.has(key))).toEqual([])
    expect(Object.keys(OUTPUT_NOT_COMPARED).filter((key) => !keys.has(key))).toEqual([])
    expect(Object.keys(EXIT_CODES).filter((key) => !keys.has(key))).toEqual([])
    expect(Object.keys(NEEDS_POSTGRES).filter((key) => !keys.has(key))).toEqual([])
  })

  for (const block of blocks) {
    const runnable = block.commands.filter((command) => !excluded(command))
    if (runnable.length === 0) continue
    it(`${block.file}:${block.line}`, async () => {
      const cwd = mkdtempSync(path.join(dir, 'fresh-'))
      resources.startBlock()
      for (const name of DOCS_FIXTURE_FILES) {
        copyFileSync(
          path.join(repoRoot, 'test', 'fixtures', 'docs-commands', name),
          path.join(cwd, name),
        )
      }
      // The CLI profile the docs save reads its key from key.txt: the user's.
      writeFileSync(path.join(cwd, 'key.txt'), userKey)
      // The SDK installed beside a handler, as `npm install ./podyard-worker-0.1.0.tgz` does.
      mkdirSync(path.join(cwd, 'node_modules', '@podyard'), { recursive: true })
      symlinkSync(workerSdk, path.join(cwd, 'node_modules', '@podyard', 'worker'))
      // What the block's assignments set (B=..., export PODYARD_API_KEY=...), for what follows.
      const env: Record<string, string> = {
        PATH: `${binDir}:${process.env.PATH}`,
        HOME: cwd,
        PODYARD_URL: url,
        PODYARD_API_KEY: userKey,
        // `podyard serve` takes a free port, not the docs' 8080.
        PODYARD_PORT: '0',
        KEY: userKey,
        TOKEN: 'dckr_pat_docs_commands',
        T: 'hf_docs_commands',
      }
      for (const command of block.commands) {
        if (excluded(command)) continue
        const caller: Caller = runsAsAdmin(command) ? 'admin' : 'user'
        const key = caller === 'admin' ? adminKey : (env.PODYARD_API_KEY ?? userKey)
        for (const text of expandSynopsis(command.text)) {
          const prepared = await prepare(command, text, key)
          const result = await runShell(prepared, {
            cwd,
            env: {
              ...env,
              ...(caller === 'admin'
                ? {
                    PODYARD_API_KEY: adminKey,
                    PODYARD_ADMIN_KEY: adminKey,
                    KEY: adminKey,
                    // The store commands (keys, accounts, credits) open the server's database.
                    PODYARD_DATA_DIR: dataDir,
                  }
                : {}),
            },
            until: LONG_RUNNING[commandKey(command)],
          })
          const where = `${command.file}:${command.line} as ${caller}: ${prepared}\n${result.output}${serverGone()}`
          // curl exits 0 on an error status: each answer's status is checked instead.
          for (const status of result.httpStatuses) expect(status, where).toBeLessThan(400)
          const expected = EXIT_CODES[commandKey(command)] ?? 0
          if (LONG_RUNNING[commandKey(command)] !== undefined) expect(result.kept, where).toBe(true)
          else expect(result.code, where).toBe(expected)
          if (result.assigned) env[result.assigned.name] = result.assigned.value
          if (!(commandKey(command) in OUTPUT_NOT_COMPARED)) {
            for (const word of shownWords(command)) expect(result.output, where).toContain(word)
          }
        }
      }
      await resources.cleanUp().catch((error: unknown) => {
        throw new Error(
          `cleaning up after ${block.file}:${block.line}: ${String(error)}${serverGone()}`,
        )
      })
    }, 180_000)
  }

  /** When the server the commands call has exited: how, and the end of what it printed. */
  function serverGone(): string {
    if (server.exitCode === null && server.signalCode === null) return ''
    return `\nthe docs' server (npm start) exited (code ${server.exitCode}, signal ${server.signalCode}); its last output:\n${banner.slice(-6000)}`
  }

  /** The command with the test's server, ports and resources in place of the docs' examples. */
  async function prepare(command: DocsCommand, text: string, key: string): Promise<string> {
    let prepared = text
      .replace(/\bnpx podyard\b/g, 'podyard')
      .replace(/http:\/\/(127\.0\.0\.1|localhost):8080/g, url)
      .replace(/^podyard dev (\S+)/, 'podyard dev $1 --port 0')
    if (command.file === 'README.md') prepared = prepared.replace(/\$PWD\//g, `${repoRoot}/`)
    for (const [placeholder, value] of Object.entries(placeholdersOf(command.file))) {
      const at = new RegExp(
        `(?<![\\w-])${placeholder.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`,
        'g',
      )
      if (!at.test(prepared)) continue
      const resolved = await resources.resolve(value, key)
      prepared = prepared.replace(at, () => resolved)
    }
    return prepared
  }
})

/** Not run here: excluded, or it needs PostgreSQL and PODYARD_TEST_POSTGRES_URL is unset. */
function excluded(command: DocsCommand): boolean {
  const key = commandKey(command)
  return key in EXCLUDED || (key in NEEDS_POSTGRES && !process.env[POSTGRES_URL_ENV])
}

/**
 * The words of the output the docs show under a command that a run prints whatever its ids,
 * times and amounts: the upper-case ones (column headings, statuses such as COMPLETED).
 */
function shownWords(command: DocsCommand): string[] {
  return command.shown.flatMap((line) => line.match(/(?<![\w-])[A-Z][A-Z_]{2,}(?![\w.-])/g) ?? [])
}

interface ShellResult {
  code: number | null
  /** A long-running command: it showed what it should (or kept running) before it was stopped. */
  kept: boolean
  /** The HTTP status of each answer a curl command printed. */
  httpStatuses: number[]
  output: string
  assigned?: { name: string; value: string }
}

/**
 * Runs one command with bash in its own process group. An assignment (`X=...`, `export
 * X=...`) also prints the value, for the block's next commands. A long-running command
 * (`--follow`, `podyard dev`) passes once its output matches `until`, and is then stopped as
 * Ctrl-C would.
 */
function runShell(
  command: string,
  options: { cwd: string; env: Record<string, string>; until?: RegExp | number },
): Promise<ShellResult> {
  const assignment = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=\S/.exec(command)
  const withStatus = /^curl /.test(command) ? `${command} -w '\\n@@http=%{http_code}\\n'` : command
  const script = assignment
    ? `${withStatus}\nprintf '\\n@@value=%s' "$${assignment[1]}"`
    : withStatus
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    })
    let output = ''
    let matched = false
    const stop = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal)
      } catch {
        // Gone already.
      }
    }
    const timer = setTimeout(() => stop('SIGKILL'), 60_000)
    // Still running (following) after that long: it does what it says.
    const alive =
      typeof options.until === 'number'
        ? setTimeout(() => {
            matched = true
            stop('SIGINT')
          }, options.until)
        : undefined
    const collect = (chunk: Buffer) => {
      output += chunk.toString()
      if (options.until instanceof RegExp && !matched && options.until.test(output)) {
        matched = true
        stop('SIGINT')
      }
    }
    child.stdout.on('data', collect)
    child.stderr.on('data', collect)
    child.on('close', (code) => {
      clearTimeout(timer)
      clearTimeout(alive)
      const value = /\n@@value=([\s\S]*)$/.exec(output)
      resolve({
        code,
        kept: matched,
        httpStatuses: [...output.matchAll(/@@http=(\d+)/g)].map((match) => Number(match[1])),
        output: value ? output.slice(0, value.index) : output,
        ...(assignment && value ? { assigned: { name: assignment[1]!, value: value[1]! } } : {}),
      })
    })
  })
}
