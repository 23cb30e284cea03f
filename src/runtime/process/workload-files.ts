import path from 'node:path'

/** The files of one workload in its directory of the state directory, beside its logs (log-files.ts). */
export const STATE_FILE = 'state.json'
export const EXIT_STATUS_FILE = 'exit-status'
/** The sandbox's /etc/passwd and /etc/group, naming the workload's user. */
export const PASSWD_FILE = 'passwd'
export const GROUP_FILE = 'group'
/** The /etc/hosts of a sandboxed workload off a global network (sandboxHostsText). */
export const HOSTS_FILE = 'hosts'
/** Written when the kernel killed a process of the workload for its memory limit. */
export const OUT_OF_MEMORY_FILE = 'out-of-memory'

/** The directory of one workload's files in the state directory. */
export function workloadDir(stateDir: string, id: string): string {
  return path.join(stateDir, id)
}

export function workloadFile(stateDir: string, id: string, name: string): string {
  return path.join(stateDir, id, name)
}

/** The error of a file (a state.json, the state directory) that is not there. */
export function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT'
}
