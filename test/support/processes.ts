import { execFileSync } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'

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

/**
 * Removes a test's data directory as a process-driver server left it: workloads outlive their
 * server, as pods do, and so do their disk images mounted under the directory (root only). Each
 * process group whose command line names the directory (a workload's leader) is killed, the
 * mounts below it are lazily unmounted (their loop devices go with them), then it is removed.
 */
export function removeDataDir(dir: string): void {
  for (const pid of processesWith(dir)) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      // Not a group leader, or gone meanwhile: its group's leader is listed too.
    }
  }
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1]?.replaceAll('\\040', ' '))
    .filter((point): point is string => point !== undefined && point.startsWith(`${dir}/`))
  for (const point of mounts.sort().reverse()) {
    try {
      execFileSync('umount', ['-l', point], { stdio: 'ignore' })
    } catch {
      // Unmounted meanwhile.
    }
  }
  rmSync(dir, { recursive: true, force: true })
}
