import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'

export const BANNER_LAST_LINE = 'Stop with Ctrl-C (SIGINT) or SIGTERM.'

export const repoRoot = path.resolve(import.meta.dirname, '..', '..')
/** The published bin; dist/ is rebuilt from the sources by the suite's global setup. */
const bin = path.join(repoRoot, 'bin', 'podyard.js')

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs `podyard <args>` as a real child process (the same entry the bin uses); `stdin`, when
 * given, is its standard input (otherwise an empty one).
 */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  options: { stdin?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: repoRoot,
      env: { ...process.env, PODYARD_ADMIN_KEY: '', ...env },
      stdio: 'pipe',
    })
    // No stdin given: an empty one (end of input at once), like </dev/null.
    child.stdin.end(options.stdin ?? '')
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Starts `podyard serve` and resolves once its banner (or, with --json, its ready line) is out. */
export function startServe(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{
  child: ChildProcess
  url: string
  banner: string
  exited: Promise<number | null>
  stdout: () => string
  stderr: () => string
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'serve', ...args], {
      cwd: repoRoot,
      env: { ...process.env, PODYARD_ADMIN_KEY: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)))
    let output = ''
    let stderr = ''
    const timer = setTimeout(
      () => reject(new Error(`serve did not start:\n${output}\n${stderr}`)),
      30_000,
    )
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const ready = /^\{"ready":.*\}$/m.exec(output)
      const match = ready
        ? /"url":"(http:\/\/[^"]+)"/.exec(ready[0])
        : output.includes(BANNER_LAST_LINE)
          ? /is serving at (http:\/\/\S+)/.exec(output)
          : null
      if (match) {
        clearTimeout(timer)
        resolve({
          child,
          url: match[1]!,
          banner: output,
          exited,
          stdout: () => output,
          stderr: () => stderr,
        })
      }
    })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`serve exited with ${code}:\n${output}\n${stderr}`))
    })
  })
}

/**
 * The environment of a user whose shell sets none of podyard's or runpodctl's settings, with
 * `home` as HOME: no profile, URL or key from the machine running the tests (its own
 * ~/.runpod/config.toml included) reaches the CLI.
 */
export function settingsFreeEnv(home: string): NodeJS.ProcessEnv {
  return {
    PODYARD_PROFILES_FILE: path.join(home, 'profiles.json'),
    PODYARD_URL: '',
    PODYARD_API_KEY: '',
    PODYARD_PROFILE: '',
    RUNPOD_API_KEY: '',
    RUNPOD_API_URL: '',
    HOME: home,
  }
}
