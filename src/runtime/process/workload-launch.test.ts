import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import type { WorkloadSpec } from '../driver.js'
import {
  buildBubblewrapArgs,
  sandboxHostsText,
  buildLaunch,
  buildWorkloadEnv,
  DEFAULT_IDLE_COMMAND,
  DEFAULT_PATH,
  mountEnvName,
  PRIVILEGE_DROP_CAPABILITIES,
  resolveCommand,
  sandboxIdentityFiles,
  type BubblewrapSandbox,
  type SandboxIdentity,
} from './workload-launch.js'

function spec(overrides: Partial<WorkloadSpec> = {}): WorkloadSpec {
  return {
    id: 'pod1',
    image: 'runpod/pytorch:2.4',
    command: 'python train.py',
    env: { RUNPOD_POD_ID: 'pod1' },
    containerDiskPath: '/data/disks/pod1',
    diskGb: 20,
    mounts: [
      { hostPath: '/data/volumes/pod1', containerPath: '/workspace', kind: 'persistent' },
      { hostPath: '/data/network/nv1', containerPath: '/runpod-volume', kind: 'network' },
    ],
    ports: [
      { private: 8888, protocol: 'http', public: 40001 },
      { private: 22, protocol: 'tcp', public: 40002 },
    ],
    gpuIndices: [1, 3],
    vcpus: 4,
    memoryGb: 16,
    labels: {},
    ...overrides,
  }
}

const sandbox: BubblewrapSandbox = {
  bwrapPath: '/usr/bin/bwrap',
  systemDirs: [
    { path: '/usr', symlinkTo: null },
    { path: '/bin', symlinkTo: 'usr/bin' },
  ],
  etcEntries: [
    { path: '/etc/hosts', symlinkTo: null },
    { path: '/etc/ssl/certs', symlinkTo: null },
    { path: '/etc/localtime', symlinkTo: '/usr/share/zoneinfo/Etc/UTC' },
  ],
  setprivPath: null,
  hostFiles: [],
}

const rootSandbox: BubblewrapSandbox = { ...sandbox, setprivPath: '/usr/bin/setpriv' }

const identity: SandboxIdentity = {
  uid: 1900000007,
  gid: 1900000007,
  passwdFile: '/state/pod1/passwd',
  groupFile: '/state/pod1/group',
}

describe('resolveCommand', () => {
  const images = { 'runpod/pytorch:2.4': 'jupyter lab' }

  it("prefers the spec's command, then the image's, then the idle command", () => {
    expect(resolveCommand(spec(), images)).toEqual({
      command: 'python train.py',
      source: 'command',
    })
    expect(resolveCommand(spec({ command: null }), images)).toEqual({
      command: 'jupyter lab',
      source: 'image',
    })
    expect(resolveCommand(spec({ command: null, image: 'other' }), images)).toEqual({
      command: DEFAULT_IDLE_COMMAND,
      source: 'idle',
    })
    expect(resolveCommand(spec({ command: null, image: 'other' }), images, 'exec idle')).toEqual({
      command: 'exec idle',
      source: 'idle',
    })
  })

  it("runs RunPod's JSON dockerArgs as the entrypoint then the command, each word literal", () => {
    const resolved = resolveCommand(
      spec({
        command: null,
        imageCommand: { entrypoint: ['/bin/sh', '-c'], cmd: ['echo "a b" $HOME'] },
      }),
      images,
    )
    expect(resolved).toEqual({
      command: `exec '/bin/sh' '-c' 'echo "a b" $HOME'`,
      source: 'command',
    })
    const quoted = resolveCommand(spec({ command: null, imageCommand: { cmd: ["it's"] } }), images)
    expect(quoted.command).toBe("exec 'it'\\''s'")
  })

  it('keeps an empty command (the spec asked for it) and ignores inherited object keys', () => {
    expect(resolveCommand(spec({ command: '' }), images).source).toBe('command')
    expect(resolveCommand(spec({ command: null, image: 'constructor' }), images).source).toBe(
      'idle',
    )
  })

  it('idles until it is signalled', () => {
    expect(DEFAULT_IDLE_COMMAND).toBe('exec sleep infinity')
  })
})

describe('mountEnvName', () => {
  it('upper-cases the container path and turns other characters into underscores', () => {
    expect(mountEnvName('/workspace')).toBe('PODYARD_MOUNT_WORKSPACE')
    expect(mountEnvName('/runpod-volume')).toBe('PODYARD_MOUNT_RUNPOD_VOLUME')
    expect(mountEnvName('/mnt/data.v2/')).toBe('PODYARD_MOUNT_MNT_DATA_V2')
  })
})

describe('buildWorkloadEnv', () => {
  it('unsandboxed: tells the workload where its disks really are, its GPUs and ports', () => {
    expect(
      buildWorkloadEnv(spec(), { sandboxed: false, hostPath: '/opt/node/bin:/usr/bin' }),
    ).toEqual({
      PATH: '/opt/node/bin:/usr/bin',
      RUNPOD_POD_ID: 'pod1',
      HOME: '/data/disks/pod1',
      PODYARD_CONTAINER_DISK: '/data/disks/pod1',
      PODYARD_MOUNT_WORKSPACE: '/data/volumes/pod1',
      PODYARD_MOUNT_RUNPOD_VOLUME: '/data/network/nv1',
      CUDA_VISIBLE_DEVICES: '1,3',
      NVIDIA_VISIBLE_DEVICES: '1,3',
      RUNPOD_TCP_PORT_8888: '40001',
      RUNPOD_TCP_PORT_22: '40002',
    })
  })

  it('sandboxed: the paths are the ones inside the sandbox, PATH the standard one', () => {
    const env = buildWorkloadEnv(spec(), { sandboxed: true, hostPath: '/opt/node/bin' })
    expect(env).toMatchObject({
      PATH: DEFAULT_PATH,
      HOME: '/root',
      PODYARD_CONTAINER_DISK: '/root',
      PODYARD_MOUNT_WORKSPACE: '/workspace',
      PODYARD_MOUNT_RUNPOD_VOLUME: '/runpod-volume',
    })
  })

  it('sets no GPU variables without GPUs, and falls back to a standard PATH', () => {
    const env = buildWorkloadEnv(spec({ gpuIndices: [], ports: [], mounts: [] }), {
      sandboxed: false,
      hostPath: undefined,
    })
    expect(env).toEqual({
      PATH: DEFAULT_PATH,
      RUNPOD_POD_ID: 'pod1',
      HOME: '/data/disks/pod1',
      PODYARD_CONTAINER_DISK: '/data/disks/pod1',
    })
  })

  it("lets the spec set PATH, but not override the driver's facts", () => {
    const env = buildWorkloadEnv(
      spec({ env: { PATH: '/custom', HOME: '/elsewhere', CUDA_VISIBLE_DEVICES: '0,1,2,3' } }),
      { sandboxed: false, hostPath: '/usr/bin' },
    )
    expect(env.PATH).toBe('/custom')
    expect(env.HOME).toBe('/data/disks/pod1')
    expect(env.CUDA_VISIBLE_DEVICES).toBe('1,3')
  })
})

describe('buildBubblewrapArgs', () => {
  it('shows a minimal read-only host, the disk at /root and the mounts read-write', () => {
    const args = buildBubblewrapArgs(spec({ gpuIndices: [] }), sandbox, 'python train.py', identity)
    // prettier-ignore
    expect(args).toEqual([
      '--ro-bind', '/usr', '/usr',
      '--symlink', 'usr/bin', '/bin',
      '--perms', '0755', '--dir', '/etc',
      '--perms', '0755', '--dir', '/etc/ssl',
      '--ro-bind', '/etc/hosts', '/etc/hosts',
      '--ro-bind', '/etc/ssl/certs', '/etc/ssl/certs',
      '--symlink', '/usr/share/zoneinfo/Etc/UTC', '/etc/localtime',
      '--ro-bind', '/state/pod1/passwd', '/etc/passwd',
      '--ro-bind', '/state/pod1/group', '/etc/group',
      '--proc', '/proc',
      '--dev', '/dev',
      '--perms', '1777', '--tmpfs', '/tmp',
      '--perms', '1777', '--tmpfs', '/var/tmp',
      '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
      '--hostname', 'pod1',
      '--bind', '/data/disks/pod1', '/root',
      '--bind', '/data/volumes/pod1', '/workspace',
      '--bind', '/data/network/nv1', '/runpod-volume',
      '--chdir', '/root',
      '--', '/bin/sh', '-c', 'python train.py',
    ])
  })

  it("shows a global network's hosts file at /etc/hosts instead of the host's", () => {
    const args = buildBubblewrapArgs(spec(), sandbox, 'x', identity, {
      hostsDir: '/run/podyard-global/pyg1.d',
    })
    const at = (target: string) =>
      args.flatMap((arg, i) => (args[i + 2] === target ? [arg, args[i + 1]] : []))
    // Its directory is bound (the file is replaced by renames), and /etc/hosts links into it.
    expect(at('/etc/podyard-network')).toEqual(['--ro-bind', '/run/podyard-global/pyg1.d'])
    expect(at('/etc/hosts')).toEqual(['--symlink', '/etc/podyard-network/hosts'])
  })

  it("shows a workload off a global network the host's hosts file with its own name", () => {
    const args = buildBubblewrapArgs(spec(), sandbox, 'x', identity, {
      hostsFile: '/state/pod1/hosts',
    })
    const hosts = args.flatMap((arg, i) => (args[i + 2] === '/etc/hosts' ? [arg, args[i + 1]] : []))
    expect(hosts).toEqual(['--ro-bind', '/state/pod1/hosts'])
    expect(sandboxHostsText('127.0.0.1\tlocalhost', 'pod1')).toBe(
      '127.0.0.1\tlocalhost\n127.0.1.1\tpod1\n',
    )
  })

  it("binds a read-only mount (podyard's build, for public model workers) read-only", () => {
    const args = buildBubblewrapArgs(
      spec({
        mounts: [
          {
            hostPath: '/srv/podyard/dist',
            containerPath: '/opt/podyard',
            kind: 'platform',
            readOnly: true,
          },
        ],
      }),
      sandbox,
      'x',
      identity,
    )
    const at = args.indexOf('/srv/podyard/dist')
    expect(args.slice(at - 1, at + 2)).toEqual(['--ro-bind', '/srv/podyard/dist', '/opt/podyard'])
  })

  it("shows the server's Node.js at its own path, after /tmp and the disk are there", () => {
    const node = '/tmp/ci/runtime/node-linux-x64/bin/node'
    const args = buildBubblewrapArgs(spec(), { ...sandbox, hostFiles: [node] }, 'x', identity)
    const tail = args.slice(args.indexOf('/runpod-volume') + 1, args.indexOf('--chdir'))
    // prettier-ignore
    expect(tail).toEqual([
      '--perms', '0755', '--dir', '/tmp/ci',
      '--perms', '0755', '--dir', '/tmp/ci/runtime',
      '--perms', '0755', '--dir', '/tmp/ci/runtime/node-linux-x64',
      '--perms', '0755', '--dir', '/tmp/ci/runtime/node-linux-x64/bin',
      '--ro-bind', node, node,
    ])
    expect(args.indexOf('/tmp')).toBeLessThan(args.indexOf(node))
  })

  it('never shows the host root, its /etc whole, /home or the data directory', () => {
    const args = buildBubblewrapArgs(spec(), rootSandbox, 'x', identity)
    const bound = args.flatMap((a, i) =>
      a === '--ro-bind' || a === '--bind' || a === '--dev-bind-try' ? [args[i + 1]] : [],
    )
    expect(bound).not.toContain('/')
    expect(bound).not.toContain('/etc')
    expect(bound).not.toContain('/home')
    expect(bound).not.toContain('/etc/passwd')
    expect(bound.filter((p) => p!.startsWith('/data/'))).toEqual([
      '/data/disks/pod1',
      '/data/volumes/pod1',
      '/data/network/nv1',
    ])
  })

  it("makes a mount's missing ancestors reachable (0755) before binding it", () => {
    const args = buildBubblewrapArgs(
      spec({
        mounts: [{ hostPath: '/data/network/nv1', containerPath: '/mnt/team/a', kind: 'network' }],
      }),
      sandbox,
      'x',
      identity,
    )
    const made = args.flatMap((a, i) => (a === '--dir' ? [args[i + 1]] : []))
    expect(made).toEqual(['/etc', '/etc/ssl', '/mnt', '/mnt/team'])
    expect(args.indexOf('/mnt/team')).toBeLessThan(args.indexOf('/data/network/nv1'))
    expect(args[args.indexOf('/mnt') - 2]).toBe('0755')
  })

  it('never ties the workload to its parent or moves it out of its process group', () => {
    const args = buildBubblewrapArgs(spec(), rootSandbox, 'x', identity)
    expect(args).not.toContain('--die-with-parent')
    expect(args).not.toContain('--new-session')
    expect(args).not.toContain('--unshare-net')
  })

  it('started by root, ends as the identity with no capability left', () => {
    const args = buildBubblewrapArgs(spec(), rootSandbox, 'x', identity)
    const dropAt = args.indexOf('--cap-drop')
    expect(args.slice(dropAt, dropAt + 2)).toEqual(['--cap-drop', 'ALL'])
    const added = args.flatMap((a, i) => (a === '--cap-add' ? [args[i + 1]] : []))
    expect(added).toEqual([...PRIVILEGE_DROP_CAPABILITIES])
    const command = args.slice(args.indexOf('--') + 1)
    // prettier-ignore
    expect(command).toEqual([
      '/usr/bin/setpriv',
      '--reuid=1900000007', '--regid=1900000007', '--clear-groups',
      '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs',
      '--', '/bin/sh', '-c', 'x',
    ])
    const unprivileged = buildBubblewrapArgs(spec(), sandbox, 'x', identity)
    expect(unprivileged).not.toContain('--cap-drop')
    expect(unprivileged).not.toContain('/usr/bin/setpriv')
  })

  it('passes the devices of its GPUs through, when they exist', () => {
    const args = buildBubblewrapArgs(spec({ gpuIndices: [3] }), sandbox, 'x', identity)
    const devices = args.flatMap((a, i) => (a === '--dev-bind-try' ? [args[i + 1]] : []))
    expect(devices).toContain('/dev/nvidia3')
    expect(devices).toContain('/dev/nvidiactl')
    expect(devices).not.toContain('/dev/nvidia1')
  })
})

describe('sandboxIdentityFiles', () => {
  it("names the workload's user and group, and no user of the host", () => {
    const files = sandboxIdentityFiles(1900000007, 1900000008)
    expect(files.passwd.split('\n')).toContain(
      'workload:x:1900000007:1900000008:podyard workload:/root:/bin/sh',
    )
    expect(files.group.split('\n')).toContain('workload:x:1900000008:')
    expect(files.passwd.split('\n').filter((l) => l !== '')).toHaveLength(3)
  })
})

describe('buildLaunch', () => {
  it('wraps sh -c in the exit-status recorder, in the container disk', () => {
    const launch = buildLaunch(spec(), {
      command: 'python train.py',
      exitStatusFile: '/state/pod1/exit-status',
      sandbox: null,
      hostPath: '/usr/bin',
    })
    expect(launch.file).toBe('/bin/sh')
    expect(launch.args.slice(2)).toEqual([
      'podyard-workload',
      '/state/pod1/exit-status',
      '/bin/sh',
      '-c',
      'python train.py',
    ])
    expect(launch.cwd).toBe('/data/disks/pod1')
    expect(launch.env.PODYARD_MOUNT_WORKSPACE).toBe('/data/volumes/pod1')
  })

  it('puts bwrap inside the recorder when sandboxed', () => {
    const launch = buildLaunch(spec(), {
      command: 'x',
      exitStatusFile: '/s/exit-status',
      sandbox: { sandbox, identity },
      hostPath: '/usr/bin',
    })
    expect(launch.args.slice(2, 5)).toEqual([
      'podyard-workload',
      '/s/exit-status',
      '/usr/bin/bwrap',
    ])
    expect(launch.env.PODYARD_MOUNT_WORKSPACE).toBe('/workspace')
  })

  it('records the exit status of the command, with arguments kept intact', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-wrapper-'))
    try {
      const launch = buildLaunch(spec({ containerDiskPath: dir, mounts: [] }), {
        command: 'printf "%s|" "$0" "a b"; exit 42',
        exitStatusFile: path.join(dir, 'exit-status'),
        sandbox: null,
        hostPath: process.env.PATH,
      })
      const run = spawnSync(launch.file, launch.args, { cwd: launch.cwd, env: launch.env })
      expect(run.status).toBe(0)
      expect(run.stdout.toString()).toBe('/bin/sh|a b|')
      expect(readFileSync(path.join(dir, 'exit-status'), 'utf8')).toBe('42\n')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
