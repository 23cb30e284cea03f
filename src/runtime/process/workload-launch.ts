import path from 'node:path'
import type { WorkloadSpec } from '../driver.js'

/**
 * What a workload runs when it has no command and its image is not mapped: a process that
 * does nothing until it is stopped, so that the pod is "running" and its disks are there for
 * whoever connects. `exec` makes sleep the shell's own process, so SIGTERM reaches it at once.
 */
export const DEFAULT_IDLE_COMMAND = 'exec sleep infinity'

/**
 * Runs the workload ("$@") and then records its exit status in the file named by $1. The
 * status file lets a server that did not start the workload (one restarted since: the
 * workload is not its child, so it cannot wait() for it) learn how it ended. When the group is
 * killed this shell dies with it and leaves no file: exit code unknown (null).
 */
export const EXIT_STATUS_WRAPPER = 'exitfile=$1; shift; "$@"; echo $? > "$exitfile"'

/** argv[0] of the wrapper shell, which is what `ps` shows for every workload. */
export const WRAPPER_NAME = 'podyard-workload'

/** Where the container disk appears inside the sandbox (the home of root in an image). */
export const SANDBOX_HOME = '/root'

/** Where a global network's hosts directory appears; /etc/hosts links to its `hosts`. */
export const SANDBOX_HOSTS_DIR = '/etc/podyard-network'

/** PATH of a sandboxed workload, and of any workload when the server has none. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/**
 * Host directories the sandbox shows read-only, when they exist: what programs need to run.
 * Deliberately not /etc (a curated part of it, below), /home, /root, /opt, /srv, /var, /run,
 * /mnt, /media: they hold other users' files, secrets and the server's data directory.
 */
export const SANDBOX_SYSTEM_DIRS = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
] as const

/**
 * The parts of the host's /etc the sandbox shows read-only, when they exist: name resolution,
 * the dynamic linker, time zone, TLS roots, shell start-up files, the alternatives that
 * /usr/bin's links go through. Never shadow, gshadow, sudoers, ssh host keys, ssl/private,
 * machine-id, environment or anything of the host's services. passwd and group are not the
 * host's: the driver writes ones that name the workload's user (sandboxIdentityFiles).
 */
export const SANDBOX_ETC_ENTRIES = [
  'hosts',
  'hostname',
  'resolv.conf',
  'nsswitch.conf',
  'host.conf',
  'gai.conf',
  'networks',
  'protocols',
  'services',
  'rpc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'os-release',
  'lsb-release',
  'debian_version',
  'alpine-release',
  'mime.types',
  'mtab',
  'alternatives',
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates',
  'ca-certificates.conf',
  'pki/tls/certs',
  'pki/ca-trust/extracted',
  'crypto-policies/back-ends',
  'fonts',
  'terminfo',
  'profile',
  'bash.bashrc',
  'inputrc',
  'shells',
  'locale.alias',
] as const

/**
 * The capabilities bwrap keeps when root starts it: only what it needs to enter the container
 * disk (its user's, mode 0700) and what `setpriv` needs to become that user (setuid, setgid,
 * setgroups) and to empty the bounding set. Once it is that user the kernel clears them all:
 * the workload has none, and no_new_privs plus nosuid mounts keep it from regaining any
 * through a setuid program.
 */
export const PRIVILEGE_DROP_CAPABILITIES = [
  'CAP_DAC_READ_SEARCH',
  'CAP_SETUID',
  'CAP_SETGID',
  'CAP_SETPCAP',
] as const

/** NVIDIA device nodes every GPU process needs besides its /dev/nvidia<index>. */
const NVIDIA_CONTROL_DEVICES = [
  '/dev/nvidiactl',
  '/dev/nvidia-uvm',
  '/dev/nvidia-uvm-tools',
  '/dev/nvidia-modeset',
]

export type CommandSource = 'command' | 'image' | 'idle'

export interface ResolvedCommand {
  command: string
  source: CommandSource
}

/** One word for /bin/sh, taken literally. */
function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`
}

/** The spec's own command, else the command its image maps to, else the idle command. */
export function resolveCommand(
  spec: Pick<WorkloadSpec, 'command' | 'image' | 'imageCommand'>,
  images: Readonly<Record<string, string>>,
  idleCommand: string = DEFAULT_IDLE_COMMAND,
): ResolvedCommand {
  if (spec.command !== null) return { command: spec.command, source: 'command' }
  const argv = [...(spec.imageCommand?.entrypoint ?? []), ...(spec.imageCommand?.cmd ?? [])]
  if (argv.length > 0)
    return { command: `exec ${argv.map(shellQuote).join(' ')}`, source: 'command' }
  const mapped = Object.hasOwn(images, spec.image) ? images[spec.image] : undefined
  if (mapped !== undefined) return { command: mapped, source: 'image' }
  return { command: idleCommand, source: 'idle' }
}

/** `/workspace` -> `PODYARD_MOUNT_WORKSPACE`, `/runpod-volume` -> `PODYARD_MOUNT_RUNPOD_VOLUME`. */
export function mountEnvName(containerPath: string): string {
  const trimmed = containerPath.replace(/^\/+|\/+$/g, '')
  return `PODYARD_MOUNT_${trimmed.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`
}

/** A host path as the sandbox should show it: bound, or re-created as the same symlink. */
export interface HostDir {
  path: string
  /** The link's target when the host path is a symlink (`/bin` -> `usr/bin` on merged /usr). */
  symlinkTo: string | null
}

export interface BubblewrapSandbox {
  bwrapPath: string
  systemDirs: readonly HostDir[]
  /** The curated entries of /etc present on this host (SANDBOX_ETC_ENTRIES), as absolute paths. */
  etcEntries: readonly HostDir[]
  /**
   * Set when the server runs as root: bwrap runs privileged (no user namespace needed) and the
   * workload drops to its own unprivileged user through this `setpriv`. Null otherwise: bwrap
   * makes a user namespace and the workload keeps the server's uid.
   */
  setprivPath: string | null
  /**
   * Host files shown read-only at their own path: the Node.js executable the server runs on,
   * when it is outside the system directories (nvm, Volta, the npm registry's `node` package),
   * since the built-in images and the public models' workers run it (`exec <that path>`).
   */
  hostFiles: readonly string[]
}

/**
 * Who a sandboxed workload runs as. With root, an unprivileged uid of its tenant (never one
 * that owns anything of the host); without, the server's own uid inside a user namespace.
 */
export interface SandboxIdentity {
  uid: number
  gid: number
  /** Host files shown as the sandbox's /etc/passwd and /etc/group (they name this user). */
  passwdFile: string
  groupFile: string
}

/** The user name a sandboxed workload has (in the passwd file the driver writes). */
export const SANDBOX_USER_NAME = 'workload'

/** The passwd and group texts of a sandbox: root, nobody and the workload's own user. */
export function sandboxIdentityFiles(uid: number, gid: number): { passwd: string; group: string } {
  const passwd = [
    'root:x:0:0:root:/root:/bin/sh',
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
    `${SANDBOX_USER_NAME}:x:${uid}:${gid}:podyard workload:${SANDBOX_HOME}:/bin/sh`,
  ]
  const group = ['root:x:0:', 'nogroup:x:65534:', `${SANDBOX_USER_NAME}:x:${gid}:`]
  return { passwd: `${passwd.join('\n')}\n`, group: `${group.join('\n')}\n` }
}

export interface WorkloadEnvOptions {
  sandboxed: boolean
  /** PATH for an unsandboxed workload (the server's own); ignored in the sandbox. */
  hostPath: string | undefined
}

/**
 * The environment of a workload. The spec's variables come first; the driver's facts (where
 * the disks are, which GPUs and ports it has) override them because they describe what the
 * workload really got. PATH is the exception: a spec that sets PATH knows its image.
 */
export function buildWorkloadEnv(
  spec: WorkloadSpec,
  options: WorkloadEnvOptions,
): Record<string, string> {
  const env: Record<string, string> = {
    PATH: options.sandboxed ? DEFAULT_PATH : (options.hostPath ?? DEFAULT_PATH),
    ...spec.env,
  }
  const disk = options.sandboxed ? SANDBOX_HOME : spec.containerDiskPath
  env.HOME = disk
  env.PODYARD_CONTAINER_DISK = disk
  for (const mount of spec.mounts) {
    // Without a sandbox nothing is mounted at containerPath (that would need root and a mount
    // namespace), so the workload learns where its volume really is from this variable.
    env[mountEnvName(mount.containerPath)] = options.sandboxed
      ? mount.containerPath
      : mount.hostPath
  }
  if (spec.gpuIndices.length > 0) {
    const devices = spec.gpuIndices.join(',')
    env.CUDA_VISIBLE_DEVICES = devices
    env.NVIDIA_VISIBLE_DEVICES = devices
  }
  for (const port of spec.ports) {
    // The workload listens on the public port itself: sharing the host's network it must, and
    // in a namespace of its own the same number is published (pod-network.ts), so a command
    // written for either works in both; RunPod's variable names the port the world reaches.
    env[`RUNPOD_TCP_PORT_${port.private}`] = String(port.public)
  }
  return env
}

/**
 * The /etc/hosts of a sandboxed workload off a global network: the host's, plus the
 * workload's own host name at 127.0.1.1 (Debian's convention), so that resolving its own name
 * works (distributed training libraries, Java's getLocalHost do).
 */
export function sandboxHostsText(hostHosts: string, id: string): string {
  const base = hostHosts === '' || hostHosts.endsWith('\n') ? hostHosts : `${hostHosts}\n`
  return `${base}127.0.1.1\t${sandboxHostnameOf(id)}\n`
}

/** A host name for the sandbox's UTS namespace: the workload id, as a pod's on RunPod. */
export function sandboxHostnameOf(id: string): string {
  return id.slice(0, 63)
}

/**
 * The directories bwrap must create on the sandbox's empty root before binding `paths`: every
 * ancestor that is neither the root nor inside `shown` (bound from the host already). bwrap
 * makes missing ancestors itself, but mode 0700 and root's: the workload's user could not
 * reach what is mounted below them. Shortest first, as they must be made.
 */
function ancestorsToMake(paths: readonly string[], shown: readonly string[]): string[] {
  const inShown = (dir: string) => shown.some((s) => dir === s || dir.startsWith(`${s}/`))
  const dirs = new Set<string>()
  for (const target of paths) {
    for (let dir = path.posix.dirname(target); dir !== '/'; dir = path.posix.dirname(dir)) {
      if (!inShown(dir)) dirs.add(dir)
    }
  }
  return [...dirs].sort((a, b) => a.length - b.length || (a < b ? -1 : 1))
}

/**
 * bubblewrap arguments that run `command` on an empty root with only: the system directories
 * and a curated /etc read-only, passwd and group naming the workload's user, the container
 * disk read-write at /root (the working directory), each mount at its container path, a fresh
 * /proc in its own PID namespace (the server and other workloads do not exist for it), a fresh
 * /dev, empty /tmp and /var/tmp, its own IPC and UTS namespaces (the host name is its id).
 * Started by root, it ends as the identity's unprivileged user with no capabilities.
 * Deliberately absent: --die-with-parent (the workload must outlive the
 * server) and --new-session (the workload must stay in the process group the driver signals;
 * it is started in a session of its own without a terminal, so there is no terminal to
 * inject input into). The network is the one bwrap starts in: the host's, or the workload's own
 * namespace that buildLaunch enters first (pod-network.ts).
 */
export function buildBubblewrapArgs(
  spec: WorkloadSpec,
  sandbox: BubblewrapSandbox,
  command: string,
  identity: SandboxIdentity,
  extra: { hostsDir?: string | undefined; hostsFile?: string | undefined } = {},
): string[] {
  const args: string[] = []
  const show = (entry: HostDir) => {
    if (entry.symlinkTo === null) args.push('--ro-bind', entry.path, entry.path)
    else args.push('--symlink', entry.symlinkTo, entry.path)
  }
  for (const dir of sandbox.systemDirs) show(dir)
  const systemPaths = sandbox.systemDirs.map((d) => d.path)
  const etcPaths = [...sandbox.etcEntries.map((e) => e.path), '/etc/passwd']
  for (const dir of ancestorsToMake(etcPaths, systemPaths)) {
    args.push('--perms', '0755', '--dir', dir)
  }
  for (const entry of sandbox.etcEntries) {
    const replaced = extra.hostsDir !== undefined || extra.hostsFile !== undefined
    if (!replaced || entry.path !== '/etc/hosts') show(entry)
  }
  if (extra.hostsDir === undefined && extra.hostsFile !== undefined) {
    args.push('--ro-bind', extra.hostsFile, '/etc/hosts')
  }
  if (extra.hostsDir !== undefined) {
    // The directory, not the file: the file is replaced by a rename, which a bind of the file
    // would not follow.
    args.push('--ro-bind', extra.hostsDir, SANDBOX_HOSTS_DIR)
    args.push('--symlink', `${SANDBOX_HOSTS_DIR}/hosts`, '/etc/hosts')
  }
  args.push('--ro-bind', identity.passwdFile, '/etc/passwd')
  args.push('--ro-bind', identity.groupFile, '/etc/group')
  args.push('--proc', '/proc', '--dev', '/dev')
  args.push('--perms', '1777', '--tmpfs', '/tmp', '--perms', '1777', '--tmpfs', '/var/tmp')
  if (spec.gpuIndices.length > 0) {
    const devices = [...NVIDIA_CONTROL_DEVICES, ...spec.gpuIndices.map((i) => `/dev/nvidia${i}`)]
    for (const device of devices) args.push('--dev-bind-try', device, device)
  }
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try')
  args.push('--hostname', sandboxHostnameOf(spec.id))
  if (sandbox.setprivPath !== null) {
    args.push('--cap-drop', 'ALL')
    for (const capability of PRIVILEGE_DROP_CAPABILITIES) args.push('--cap-add', capability)
  }
  const mountPaths = spec.mounts.map((m) => m.containerPath)
  for (const dir of ancestorsToMake(mountPaths, [...systemPaths, '/etc', '/tmp', '/var/tmp'])) {
    args.push('--perms', '0755', '--dir', dir)
  }
  args.push('--bind', spec.containerDiskPath, SANDBOX_HOME)
  for (const mount of spec.mounts) {
    args.push(mount.readOnly ? '--ro-bind' : '--bind', mount.hostPath, mount.containerPath)
  }
  // Last, so that a file under /tmp (or the disk) is not hidden by what is mounted there; the
  // directories that exist by now are not made again.
  const existing = new Set(['/tmp', '/var/tmp', SANDBOX_HOME, ...mountPaths])
  for (const dir of ancestorsToMake(sandbox.hostFiles, [...systemPaths, '/etc', '/proc', '/dev'])) {
    if (!existing.has(dir)) args.push('--perms', '0755', '--dir', dir)
  }
  for (const file of sandbox.hostFiles) args.push('--ro-bind', file, file)
  args.push('--chdir', SANDBOX_HOME, '--')
  if (sandbox.setprivPath !== null) {
    args.push(
      sandbox.setprivPath,
      `--reuid=${identity.uid}`,
      `--regid=${identity.gid}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
    )
  }
  args.push('/bin/sh', '-c', command)
  return args
}

export interface Launch {
  file: string
  args: string[]
  env: Record<string, string>
  cwd: string
}

export interface LaunchOptions {
  command: string
  exitStatusFile: string
  /** The sandbox and who the workload is in it; null: unsandboxed. */
  sandbox: { sandbox: BubblewrapSandbox; identity: SandboxIdentity } | null
  /**
   * The sandbox enters this network namespace first (pod-network.ts): nsenter and the
   * namespace's path. Null: the host's network.
   */
  netns?: { nsenterPath: string; path: string } | null
  /**
   * Bound at SANDBOX_HOSTS_DIR, its `hosts` shown at /etc/hosts instead of the host's (a
   * global network's members).
   */
  hostsDir?: string
  /** Shown at /etc/hosts instead of the host's (sandboxHostsText), without a hostsDir. */
  hostsFile?: string
  hostPath: string | undefined
}

/** The exact process to spawn for a spec: the exit-status wrapper around sh or bwrap. */
export function buildLaunch(spec: WorkloadSpec, options: LaunchOptions): Launch {
  const sandboxed = options.sandbox
  const netns = sandboxed && options.netns ? options.netns : null
  const workload = sandboxed
    ? [
        ...(netns ? [netns.nsenterPath, `--net=${netns.path}`] : []),
        sandboxed.sandbox.bwrapPath,
        ...buildBubblewrapArgs(spec, sandboxed.sandbox, options.command, sandboxed.identity, {
          hostsDir: options.hostsDir,
          hostsFile: options.hostsFile,
        }),
      ]
    : ['/bin/sh', '-c', options.command]
  return {
    file: '/bin/sh',
    args: ['-c', EXIT_STATUS_WRAPPER, WRAPPER_NAME, options.exitStatusFile, ...workload],
    env: buildWorkloadEnv(spec, {
      sandboxed: options.sandbox !== null,
      hostPath: options.hostPath,
    }),
    cwd: spec.containerDiskPath,
  }
}
