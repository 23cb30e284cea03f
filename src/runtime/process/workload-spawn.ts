import { spawn } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { readProcStatSync } from './process-group.js'
import type { Launch } from './workload-launch.js'

/**
 * Starts a workload's launch as a detached process group writing to `outputFile`; `onExit`
 * hears when this process's child ends. Its start ticks identify the leader later (null when
 * it was gone before they could be read).
 */
export async function spawnDetached(
  id: string,
  launch: Launch,
  outputFile: string,
  onExit: (pid: number) => void,
): Promise<{ pid: number; startTicks: number | null }> {
  // output.log is opened here and handed to the child as its stdout and stderr: the
  // workload writes to the file itself, so its output does not depend on this process
  // staying alive (a pipe would break, and the workload die of SIGPIPE, with the server).
  // Append mode keeps the output of earlier runs, which logs.jsonl offsets refer to.
  const fd = openSync(outputFile, 'a')
  let child
  try {
    child = spawn(launch.file, launch.args, {
      cwd: launch.cwd,
      env: launch.env,
      // A new session and process group, so that the whole workload can be signalled as
      // one (kill(-pgid)) and the server's own signals (Ctrl-C on its group) spare it.
      detached: true,
      stdio: ['ignore', fd, fd],
    })
  } finally {
    closeSync(fd)
  }
  const pid = child.pid
  if (pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve))
    throw new Error(`workload ${id}: could not start: ${error.message}`, { cause: error })
  }
  // Read before this function yields to the event loop: until then Node cannot have reaped
  // the child, so /proc/<pid> is there even for a command that exits at once.
  const startTicks = readProcStatSync(pid)?.starttime ?? null
  child.on('error', () => undefined)
  child.once('exit', () => onExit(pid))
  child.unref()
  return { pid, startTicks }
}
