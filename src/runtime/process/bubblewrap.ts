import { execFile } from 'node:child_process'
import { constants } from 'node:fs'
import {
  access,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readlink,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { WorkloadSpec } from '../driver.js'
import {
  buildBubblewrapArgs,
  DEFAULT_PATH,
  SANDBOX_ETC_ENTRIES,
  SANDBOX_SYSTEM_DIRS,
  sandboxIdentityFiles,
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

/** Whether `target` is inside one of the directories a sandbox shows (or is /proc's). */
function isVisibleInSandbox(target: string): boolean {
  return [...SANDBOX_SYSTEM_DIRS, '/proc'].some(
    (dir) => target === dir || target.startsWith(`${dir}/`),
  )
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

/**
 * The curated /etc entries present here. A symlink into what the sandbox shows (`localtime`
 * -> /usr/share/zoneinfo/..., `mtab` -> ../proc/self/mounts) is re-created as the same link;
 * one that points elsewhere (`resolv.conf` -> /run/systemd/resolve/...) is bound as the file it
 * resolves to, since its target is not in the sandbox.
 */
export async function readEtcEntries(): Promise<HostDir[]> {
  const entries: HostDir[] = []
  for (const name of SANDBOX_ETC_ENTRIES) {
    const entry = path.posix.join('/etc', name)
    try {
      const info = await lstat(entry)
      if (info.isSymbolicLink()) {
        const target = await readlink(entry)
        if (isVisibleInSandbox(path.posix.resolve(path.posix.dirname(entry), target))) {
          entries.push({ path: entry, symlinkTo: target })
        } else {
          const resolved = await stat(entry)
          if (resolved.isFile() || resolved.isDirectory())
            entries.push({ path: entry, symlinkTo: null })
        }
      } else if (info.isFile() || info.isDirectory()) {
        entries.push({ path: entry, symlinkTo: null })
      }
    } catch {
      // absent on this host, or a dangling link
    }
  }
  return entries
}

export type BubblewrapProbe =
  { ok: true; sandbox: BubblewrapSandbox } | { ok: false; reason: string }

export interface BubblewrapProbeOptions {
  /** PATH to find bwrap (unless `bwrapPath`) and setpriv in. */
  searchPath: string | undefined
  /** The bwrap executable; default: the one on `searchPath`. */
  bwrapPath?: string
  /** The uid (and gid) the probe's workload drops to when the server is root. */
  probeUid: number
  /**
   * Executables workloads run by their host path (Node.js's, process.execPath): those outside
   * the system directories are shown read-only at that path (BubblewrapSandbox.hostFiles).
   */
  executables?: readonly string[]
}

/**
 * Whether bubblewrap can run a workload here, tried with the very arguments a workload gets.
 * Installed is not enough: without root or setuid, bwrap needs unprivileged user namespaces,
 * which containers and hardened kernels often refuse; as root, it needs `setpriv` (util-linux)
 * to end as an unprivileged user.
 */
export async function probeBubblewrap(options: BubblewrapProbeOptions): Promise<BubblewrapProbe> {
  const bwrapPath = options.bwrapPath || (await findExecutable('bwrap', options.searchPath))
  if (bwrapPath === undefined) return { ok: false, reason: 'bwrap is not on PATH' }
  const isRoot = process.getuid?.() === 0
  let setprivPath: string | null = null
  if (isRoot) {
    const found = await findExecutable('setpriv', options.searchPath)
    if (found === undefined || !isVisibleInSandbox(found)) {
      return {
        ok: false,
        reason:
          'setpriv (util-linux) is not on PATH under /usr, /bin or /sbin: a sandbox started by root needs it to drop to an unprivileged user',
      }
    }
    setprivPath = found
  }
  const sandbox: BubblewrapSandbox = {
    bwrapPath,
    systemDirs: await readSystemDirs(),
    etcEntries: await readEtcEntries(),
    setprivPath,
    hostFiles: (options.executables ?? []).filter((file) => !isVisibleInSandbox(file)),
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'podyard-bwrap-probe-'))
  const disk = path.join(dir, 'disk')
  const uid = isRoot ? options.probeUid : (process.getuid?.() ?? 0)
  const gid = isRoot ? options.probeUid : (process.getgid?.() ?? 0)
  const identity = {
    uid,
    gid,
    passwdFile: path.join(dir, 'passwd'),
    groupFile: path.join(dir, 'group'),
  }
  const spec: WorkloadSpec = {
    id: 'probe',
    image: '',
    command: null,
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
  // Writing its disk proves the workload's user is the one its directories were given to;
  // `test -x`, that it may run each executable shown to it.
  const command = [
    ': > /root/probe',
    ...sandbox.hostFiles.map((file) => `test -x '${file.replaceAll("'", `'\\''`)}'`),
  ].join(' && ')
  try {
    const files = sandboxIdentityFiles(uid, gid)
    await writeFile(identity.passwdFile, files.passwd)
    await writeFile(identity.groupFile, files.group)
    await mkdir(disk)
    if (isRoot) await chown(disk, uid, gid)
    await new Promise<void>((resolve, reject) => {
      execFile(
        bwrapPath,
        buildBubblewrapArgs(spec, sandbox, command, identity),
        { timeout: PROBE_TIMEOUT_MS, env: { PATH: DEFAULT_PATH } },
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
    await rm(dir, { recursive: true, force: true })
  }
}
