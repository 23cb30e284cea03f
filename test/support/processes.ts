import { execFileSync } from 'node:child_process'

/** Pids of this machine's processes whose command line matches `pattern` (pgrep -f). */
export function processesWith(pattern: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number)
  } catch {
    return []
  }
}

/** SIGKILLs every process whose command line matches `pattern`; one gone meanwhile is fine. */
export function killProcessesWith(pattern: string): void {
  for (const pid of processesWith(pattern)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // Gone between the listing and the kill.
    }
  }
}
