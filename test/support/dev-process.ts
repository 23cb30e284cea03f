import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import path from 'node:path'
import { repoRoot } from './cli.js'

const bin = path.join(repoRoot, 'bin', 'podyard.js')

/** What `podyard dev` printed once its handler's endpoint exists. */
export interface DevBanner {
  baseUrl: string
  apiKey: string
  endpointId: string
  openaiBase: string
  /** The curl snippet, as printed, without its indentation. */
  curl: string
  python: string
  js: string
}

export interface DevProcess {
  child: ChildProcess
  banner: DevBanner
  stdout(): string
  stderr(): string
  /** Resolves with the first match of `pattern` in stdout and stderr after `from` characters. */
  waitFor(pattern: RegExp, options?: { timeoutMs?: number; from?: number }): Promise<string>
  /** Ctrl-C as a terminal sends it: SIGINT to the whole process group; resolves with the code. */
  interrupt(): Promise<number | null>
  exited: Promise<number | null>
}

/** The indented block under a `  <label>:` line of the banner. */
function snippet(banner: string, label: string): string {
  const lines = banner.split('\n')
  const start = lines.indexOf(`  ${label}:`)
  if (start < 0) throw new Error(`no ${label} snippet in:\n${banner}`)
  const block: string[] = []
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('    ')) break
    block.push(line.slice(4))
  }
  return block.join('\n')
}

function parseBanner(text: string): DevBanner {
  const field = (label: string) => {
    const match = new RegExp(`^  ${label} +(\\S+)`, 'm').exec(text)
    if (!match) throw new Error(`no ${label} in:\n${text}`)
    return match[1]!
  }
  return {
    baseUrl: field('base URL'),
    apiKey: field('API key'),
    endpointId: field('endpoint'),
    openaiBase: field('OpenAI base'),
    curl: snippet(text, 'curl'),
    python: snippet(text, 'runpod-python'),
    js: snippet(text, 'runpod-sdk (JavaScript)'),
  }
}

/**
 * Starts `podyard dev <args>` as a real child process in its own process group (as a shell
 * runs a foreground job), and resolves once its banner is out: the published bin (dist/), or
 * with `fromSources` the checkout's sources through tsx (`npm run podyard`).
 */
export function startDev(
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; fromSources?: boolean },
): Promise<DevProcess> {
  const entry = options.fromSources
    ? ['--import', import.meta.resolve('tsx'), path.join(repoRoot, 'src', 'main.ts')]
    : [bin]
  const child = spawn(process.execPath, [...entry, 'dev', ...args], {
    cwd: options.cwd,
    env: { ...process.env, PODYARD_ADMIN_KEY: '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let stdout = ''
  let stderr = ''
  const listeners = new Set<() => void>()
  const notify = () => listeners.forEach((listener) => listener())
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    notify()
  })
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    notify()
  })
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      resolve(code)
      notify()
    }),
  )
  let closed = false
  void exited.then(() => (closed = true))

  const waitFor = (pattern: RegExp, { timeoutMs = 30_000, from = 0 } = {}) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const text = `${stdout}\n${stderr}`.slice(from)
        const match = pattern.exec(stdout.slice(from)) ?? pattern.exec(text)
        if (match) {
          done()
          resolve(match[0])
        } else if (closed) {
          done()
          reject(new Error(`podyard dev exited before ${pattern}:\n${stdout}\n${stderr}`))
        }
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${stdout}\n${stderr}`))
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        listeners.delete(check)
      }
      listeners.add(check)
      check()
    })

  const dev: Omit<DevProcess, 'banner'> = {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    waitFor,
    exited,
    interrupt: async () => {
      if (!closed) process.kill(-child.pid!, 'SIGINT')
      return exited
    },
  }
  return waitFor(/Stop with Ctrl-C[^\n]*\n/, { timeoutMs: 60_000 }).then(
    () => ({ ...dev, banner: parseBanner(stdout) }),
    async (error: unknown) => {
      if (!closed) process.kill(-child.pid!, 'SIGKILL')
      throw error
    },
  )
}

/** Processes of this machine whose working directory is `dir` or under it. */
export function processesIn(dir: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`)
      if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(Number(entry))
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found
}

/** Whether a process with this id runs (a zombie, dead but not yet reaped, counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}
