import { execFile } from 'node:child_process'
import { constants } from 'node:fs'
import { access, lstat, mkdtemp, readlink, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { WorkloadSpec } from '../driver.js'
import {
  buildBubblewrapArgs,
  SANDBOX_SYSTEM_DIRS,
  type BubblewrapSandbox,
  type HostDir,
} from './workload-launch.js'

/** A bwrap that hangs (a stuck mount) must not hold up the first start for long. */
const PROBE_TIMEOUT_MS = 5000

export async function findExecutable(
  name: string,
  searchPath: string | undefined,
): Promise<string | undefined> {
  for (const dir of (searchPath ?? '').split(':')) {
    if (dir === '') continue
    const candidate = path.join(dir, name)
    try {
      await access(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

/** The system directories that exist on this host, and which of them are symlinks. */
export async function readSystemDirs(): Promise<HostDir[]> {
  const dirs: HostDir[] = []
  for (const dir of SANDBOX_SYSTEM_DIRS) {
    try {
      const info = await lstat(dir)
      if (info.isSymbolicLink()) dirs.push({ path: dir, symlinkTo: await readlink(dir) })
      else if (info.isDirectory()) dirs.push({ path: dir, symlinkTo: null })
    } catch {
      // absent on this host
    }
  }
  return dirs
}

export type BubblewrapProbe =
  { ok: true; sandbox: BubblewrapSandbox } | { ok: false; reason: string }

/**
 * Whether bubblewrap can run a workload here, tried with the very arguments a workload gets.
 * Installed is not enough: without root or setuid, bwrap needs unprivileged user namespaces,
 * which containers and hardened kernels often refuse.
 */
export async function probeBubblewrap(searchPath: string | undefined): Promise<BubblewrapProbe> {
  const bwrapPath = await findExecutable('bwrap', searchPath)
  if (bwrapPath === undefined) return { ok: false, reason: 'bwrap is not on PATH' }
  const sandbox: BubblewrapSandbox = {
    bwrapPath,
    systemDirs: await readSystemDirs(),
    asRoot: process.getuid?.() === 0,
  }
  const disk = await mkdtemp(path.join(tmpdir(), 'podyard-bwrap-probe-'))
  const spec: WorkloadSpec = {
    id: 'probe',
    image: '',
    command: 'exit 0',
    env: {},
    containerDiskPath: disk,
    diskGb: 0,
    mounts: [],
    ports: [],
    gpuIndices: [],
    vcpus: 1,
    memoryGb: 0,
    labels: {},
  }
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(
        bwrapPath,
        buildBubblewrapArgs(spec, sandbox, 'exit 0'),
        { timeout: PROBE_TIMEOUT_MS },
        (error, _stdout, stderr) => {
          if (error) reject(new Error(`${error.message.split('\n')[0]} ${stderr}`.trim()))
          else resolve()
        },
      )
    })
    return { ok: true, sandbox }
  } catch (error) {
    return { ok: false, reason: `${bwrapPath} failed: ${(error as Error).message}` }
  } finally {
    await rm(disk, { recursive: true, force: true })
  }
}
