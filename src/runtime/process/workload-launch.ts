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

/** PATH of a sandboxed workload, and of any workload when the server has none. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/** Host directories the sandbox shows read-only, when they exist. */
export const SANDBOX_SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/etc'] as const

/**
 * Docker's default capability set. A sandbox started by root keeps every capability unless
 * told otherwise, and CAP_SYS_ADMIN alone would let the workload undo its mounts; a root
 * workload gets what it would get in a Docker container instead.
 */
export const DOCKER_DEFAULT_CAPABILITIES = [
  'CAP_AUDIT_WRITE',
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_MKNOD',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_RAW',
  'CAP_SETFCAP',
  'CAP_SETGID',
  'CAP_SETPCAP',
  'CAP_SETUID',
  'CAP_SYS_CHROOT',
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

/** The spec's own command, else the command its image maps to, else the idle command. */
export function resolveCommand(
  spec: Pick<WorkloadSpec, 'command' | 'image'>,
  images: Readonly<Record<string, string>>,
  idleCommand: string = DEFAULT_IDLE_COMMAND,
): ResolvedCommand {
  if (spec.command !== null) return { command: spec.command, source: 'command' }
  const mapped = Object.hasOwn(images, spec.image) ? images[spec.image] : undefined
  if (mapped !== undefined) return { command: mapped, source: 'image' }
  return { command: idleCommand, source: 'idle' }
}

/** `/workspace` -> `PODYARD_MOUNT_WORKSPACE`, `/runpod-volume` -> `PODYARD_MOUNT_RUNPOD_VOLUME`. */
export function mountEnvName(containerPath: string): string {
  const trimmed = containerPath.replace(/^\/+|\/+$/g, '')
  return `PODYARD_MOUNT_${trimmed.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`
}

/** A host directory as the sandbox should show it: bound, or re-created as the same symlink. */
export interface HostDir {
  path: string
  /** The link's target when the host path is a symlink (`/bin` -> `usr/bin` on merged /usr). */
  symlinkTo: string | null
}

export interface BubblewrapSandbox {
  bwrapPath: string
  systemDirs: readonly HostDir[]
  /** The server runs as root: drop to Docker's default capabilities (bwrap keeps all). */
  asRoot: boolean
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
    // No network namespace: the workload shares the host's network, so it must listen on the
    // public port itself; RunPod's variable names the port the outside world reaches.
    env[`RUNPOD_TCP_PORT_${port.private}`] = String(port.public)
  }
  return env
}

/**
 * bubblewrap arguments that run `command` with the system directories read-only, the
 * container disk read-write at /root (the working directory), each mount read-write at its
 * container path, private /proc, /dev and /tmp, and its own PID namespace. The network is the
 * host's. Deliberately absent: --die-with-parent (the workload must outlive the server) and
 * --new-session (the workload must stay in the process group the driver signals).
 */
export function buildBubblewrapArgs(
  spec: WorkloadSpec,
  sandbox: BubblewrapSandbox,
  command: string,
): string[] {
  const args: string[] = []
  for (const dir of sandbox.systemDirs) {
    if (dir.symlinkTo === null) args.push('--ro-bind', dir.path, dir.path)
    else args.push('--symlink', dir.symlinkTo, dir.path)
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp')
  if (spec.gpuIndices.length > 0) {
    const devices = [...NVIDIA_CONTROL_DEVICES, ...spec.gpuIndices.map((i) => `/dev/nvidia${i}`)]
    for (const device of devices) args.push('--dev-bind-try', device, device)
  }
  args.push('--unshare-pid')
  if (sandbox.asRoot) {
    args.push('--cap-drop', 'ALL')
    for (const capability of DOCKER_DEFAULT_CAPABILITIES) args.push('--cap-add', capability)
  }
  args.push('--bind', spec.containerDiskPath, SANDBOX_HOME)
  for (const mount of spec.mounts) {
    args.push(mount.readOnly ? '--ro-bind' : '--bind', mount.hostPath, mount.containerPath)
  }
  args.push('--chdir', SANDBOX_HOME, '--', '/bin/sh', '-c', command)
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
  sandbox: BubblewrapSandbox | null
  hostPath: string | undefined
}

/** The exact process to spawn for a spec: the exit-status wrapper around sh or bwrap. */
export function buildLaunch(spec: WorkloadSpec, options: LaunchOptions): Launch {
  const workload = options.sandbox
    ? [options.sandbox.bwrapPath, ...buildBubblewrapArgs(spec, options.sandbox, options.command)]
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
