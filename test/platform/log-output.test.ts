import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { colourLogs, prettyLogs } from '../../src/wiring/log-output.js'
import { BANNER_LAST_LINE, repoRoot, startServe } from '../support/cli.js'

const bin = path.join(repoRoot, 'bin', 'podyard.js')
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g
// eslint-disable-next-line no-control-regex
const HAS_ANSI = /\u001b\[[0-9;]*m/

/**
 * `podyard serve` on a terminal: util-linux's `script` gives it a pseudo-terminal as stdout.
 * Resolves with everything printed up to the banner's last line, then stops the server.
 */
async function serveOnTerminal(dataDir: string, env: NodeJS.ProcessEnv): Promise<string> {
  return (await serveOnTerminalRaw(dataDir, env)).replace(ANSI, '')
}

/** As serveOnTerminal, with the terminal's escape sequences (colours) left in. */
async function serveOnTerminalRaw(dataDir: string, env: NodeJS.ProcessEnv): Promise<string> {
  const command = `exec ${process.execPath} ${bin} serve --port 0 --data-dir ${dataDir}`
  const script = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: repoRoot,
    env: { ...process.env, PODYARD_ADMIN_KEY: 'pyd_log-output-admin-key-0123456789', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const closed = new Promise<void>((resolve) => script.on('close', () => resolve()))
  let output = ''
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no banner:\n${output}`)), 30_000)
      script.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes(BANNER_LAST_LINE)) {
          clearTimeout(timer)
          resolve()
        }
      })
      script.on('close', () => reject(new Error(`serve ended:\n${output}`)))
    })
  } finally {
    // The server is the child `script` started on the terminal; stop it, then `script` ends.
    const server = execFileSync('pgrep', ['-P', String(script.pid)], { encoding: 'utf8' }).trim()
    for (const pid of server.split('\n').filter(Boolean)) process.kill(Number(pid), 'SIGTERM')
    await closed
  }
  return output.replace(/\r\n/g, '\n')
}

/** The lines from the banner's first to its last. */
function bannerOf(output: string): string[] {
  const lines = output.split('\n')
  const first = lines.findIndex((line) => /^podyard \S+ is serving at http/.test(line))
  const last = lines.indexOf(BANNER_LAST_LINE)
  expect(first).toBeGreaterThanOrEqual(0)
  return lines.slice(first, last + 1)
}

describe('log output', () => {
  const dirs: string[] = []
  const dataDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-logs-'))
    dirs.push(dir)
    return dir
  }
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  it('is pretty only on a terminal, unless the format is chosen', () => {
    expect(prettyLogs('auto', true)).toBe(true)
    expect(prettyLogs('auto', false)).toBe(false)
    expect(prettyLogs('json', true)).toBe(false)
    expect(prettyLogs('pretty', false)).toBe(true)
  })

  it('colours pretty lines only on a terminal, and never with NO_COLOR or TERM=dumb', () => {
    expect(colourLogs(true, {})).toBe(true)
    expect(colourLogs(false, {})).toBe(false)
    expect(colourLogs(true, { NO_COLOR: '1' })).toBe(false)
    // no-color.org: an empty NO_COLOR is as if it were not set.
    expect(colourLogs(true, { NO_COLOR: '' })).toBe(true)
    expect(colourLogs(true, { TERM: 'dumb' })).toBe(false)
  })

  it('colours the log on a terminal, and not with NO_COLOR=1', { timeout: 120_000 }, async () => {
    const coloured = await serveOnTerminalRaw(dataDir(), { NO_COLOR: '', TERM: 'xterm' })
    expect(coloured).toMatch(/podyard is serving/)
    expect(coloured).toMatch(HAS_ANSI)
    const plain = await serveOnTerminalRaw(dataDir(), { NO_COLOR: '1', TERM: 'xterm' })
    expect(plain).toMatch(/\] INFO: podyard is serving/)
    expect(plain).not.toMatch(HAS_ANSI)
  })

  it(
    'writes pretty lines without colour when stdout is not a terminal',
    { timeout: 60_000 },
    async () => {
      const server = await startServe(['--port', '0', '--data-dir', dataDir()], {
        PODYARD_LOG_FORMAT: 'pretty',
      })
      server.child.kill('SIGTERM')
      await server.exited
      expect(server.banner).toMatch(/\] INFO: podyard is serving/)
      expect(server.banner).not.toMatch(HAS_ANSI)
    },
  )

  it(
    'prints readable lines on a terminal, before a banner that nothing interrupts',
    { timeout: 60_000 },
    async () => {
      const output = await serveOnTerminal(dataDir(), {})
      expect(output).not.toMatch(/\{"level":/)
      expect(output).toMatch(/\d\d:\d\d:\d\d\.\d{3}\] INFO: podyard is serving/)
      const banner = bannerOf(output)
      expect(banner.some((line) => /\] (INFO|WARN|ERROR)/.test(line))).toBe(false)
      expect(banner.some((line) => line.includes('REST API'))).toBe(true)
    },
  )

  it('writes JSON lines on a terminal when asked to', { timeout: 60_000 }, async () => {
    const output = await serveOnTerminal(dataDir(), { PODYARD_LOG_FORMAT: 'json' })
    const serving = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; level: number })
      .find((line) => line.msg === 'podyard is serving')
    expect(serving?.level).toBe(30)
  })

  it('writes JSON lines when stdout is not a terminal', { timeout: 60_000 }, async () => {
    const server = await startServe(['--port', '0', '--data-dir', dataDir()])
    server.child.kill('SIGTERM')
    await server.exited
    const lines = server.banner.split('\n')
    const serving = lines.find((line) => line.includes('"podyard is serving"'))
    expect(JSON.parse(serving!)).toMatchObject({ level: 30, msg: 'podyard is serving' })
    expect(bannerOf(server.banner).some((line) => line.startsWith('{'))).toBe(false)
  })
})
