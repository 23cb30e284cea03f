import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { namespaceName, namespacePath } from '../../src/runtime/process/pod-network.js'

/** Pids of this machine's processes whose command line matches `pattern` (pgrep -f). */
export function processesWith(pattern: string): number[] {
  // As `pgrep -f`, read from /proc here: a spawned pgrep cost about 10 ms of the test worker's
  // CPU at every platform's close, hundreds of times a run.
  const matches = new RegExp(pattern)
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    let commandLine: string
    try {
      commandLine = readFileSync(`/proc/${entry}/cmdline`, 'latin1')
    } catch {
      continue // Gone meanwhile.
    }
    if (commandLine === '') continue // A kernel thread or a zombie.
    if (matches.test(commandLine.replace(/\0$/, '').replaceAll('\0', ' '))) pids.push(Number(entry))
  }
  return pids
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

/** The pasta pid file of a namespace (pod-network.ts). */
const pastaPidFile = (name: string) => `/run/podyard-pasta/${name}.pid`

/** Kills the namespace's pasta, if it still runs (it would leave by itself only after a while). */
function endPasta(netns: string): void {
  try {
    const pid = Number(readFileSync(pastaPidFile(netns), 'utf8').trim())
    if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('pas')) process.kill(pid, 'SIGKILL')
  } catch {
    // No pid file, or the pasta is gone already.
  }
  rmSync(pastaPidFile(netns), { force: true })
}

/**
 * Removes the network namespaces (and ends the pasta of each) of the workloads whose state is
 * under `dir`: a namespace is named after its driver's state directory and the workload's id,
 * and neither names the data directory on a command line.
 */
function removeNamespacesUnder(dir: string, depth = 4): void {
  let entries: string[]
  try {
    entries = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
  } catch {
    return
  }
  for (const name of entries) {
    const netns = namespaceName(dir, name)
    if (existsSync(namespacePath(netns))) {
      execFileSync('ip', ['netns', 'delete', netns], { stdio: 'ignore' })
      endPasta(netns)
    }
    if (depth > 1) removeNamespacesUnder(path.join(dir, name), depth - 1)
  }
}

/**
 * Removes a test's data directory as a process-driver server left it: workloads outlive their
 * server, as pods do, and so do their disk images mounted under the directory (root only) and
 * their network namespaces. Each process group whose command line names the directory (a
 * workload's leader) is killed, their namespaces are removed with their pasta, the mounts below
 * it are lazily unmounted (their loop devices go with them), then it is removed.
 */
export function removeDataDir(dir: string): void {
  for (const pid of processesWith(dir)) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      // Not a group leader, or gone meanwhile: its group's leader is listed too.
    }
  }
  removeNamespacesUnder(dir)
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
