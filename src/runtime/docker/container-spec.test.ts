import { describe, expect, it } from 'vitest'
import type { WorkloadSpec } from '../driver.js'
import {
  containerLimits,
  containerName,
  exitCodeOf,
  IDLE_CMD,
  logPositionOf,
  MAX_PULL_LOG_LINES,
  MERGE_STDERR,
  networkName,
  PIDS_PER_VCPU,
  pidsLimitOf,
  pullLogLabel,
  previousVolumeNames,
  toContainerCreateBody,
  volumeName,
  workloadStateOf,
  type ContainerInspection,
} from './container-spec.js'
import {
  pullFailureMessage,
  pullProgressLine,
  registryAuthHeader,
  registryOf,
  withDefaultTag,
} from './image-references.js'

function spec(overrides: Partial<WorkloadSpec> = {}): WorkloadSpec {
  return {
    id: 'pod1',
    image: 'runpod/base:1',
    command: 'echo hi',
    env: { A: '1' },
    containerDiskPath: '/data/disks/pod1',
    diskGb: 20,
    mounts: [],
    ports: [],
    gpuIndices: [],
    vcpus: 2,
    memoryGb: 4,
    labels: { kind: 'pod' },
    ...overrides,
  }
}

const options = { serverId: 'srv1', imageHasCommand: true, diskLimit: false }

describe('toContainerCreateBody', () => {
  it('runs the command with /bin/sh -c, stderr merged into stdout, and keeps the image', () => {
    const body = toContainerCreateBody(spec(), options)
    expect(body.Image).toBe('runpod/base:1')
    expect(body.Cmd).toEqual(['/bin/sh', '-c', 'exec 2>&1; echo hi'])
  })

  it('leaves Cmd to the image without a command, and idles when the image has none', () => {
    expect(toContainerCreateBody(spec({ command: null }), options).Cmd).toBeUndefined()
    expect(
      toContainerCreateBody(spec({ command: null }), { ...options, imageHasCommand: false }).Cmd,
    ).toEqual([...IDLE_CMD])
  })

  it("sets the entrypoint and command from RunPod's JSON dockerArgs, stderr merged", () => {
    const body = toContainerCreateBody(
      spec({
        command: null,
        imageCommand: { entrypoint: ['/bin/sh', '-c'], cmd: ['echo "a b" && sleep 1'] },
      }),
      options,
    )
    expect(body.Entrypoint).toEqual([
      '/bin/sh',
      '-c',
      'exec 2>&1; exec "$@"',
      'sh',
      '/bin/sh',
      '-c',
    ])
    expect(body.Cmd).toEqual(['echo "a b" && sleep 1'])
    // Only a command: the image's entrypoint stays and gets it as its arguments.
    const cmdOnly = toContainerCreateBody(
      spec({ command: null, imageCommand: { cmd: ['serve', '--port', '80'] } }),
      options,
    )
    expect(cmdOnly.Entrypoint).toBeUndefined()
    expect(cmdOnly.Cmd).toEqual(['serve', '--port', '80'])
  })

  it('passes env as NAME=value', () => {
    const body = toContainerCreateBody(spec({ env: { A: '1', B: 'x=y z' } }), options)
    expect(body.Env).toEqual(['A=1', 'B=x=y z'])
  })

  it("labels the container with the spec's labels, the server and the workload", () => {
    expect(toContainerCreateBody(spec(), options).Labels).toEqual({
      kind: 'pod',
      'podyard.server': 'srv1',
      'podyard.workload': 'pod1',
      'podyard.spec-labels': '["kind"]',
      'podyard.log-base': '0',
      'podyard.pull-log': '[]',
    })
    // A spec label cannot impersonate another server or workload, nor move the log.
    const sneaky = spec({
      labels: { 'podyard.server': 'other', 'podyard.workload': 'x', 'podyard.log-base': '9' },
    })
    expect(toContainerCreateBody(sneaky, options).Labels).toEqual({
      'podyard.server': 'srv1',
      'podyard.workload': 'pod1',
      'podyard.spec-labels': '[]',
      'podyard.log-base': '0',
      'podyard.pull-log': '[]',
    })
  })

  it('carries where its log continues the workload log: the base and the pull lines', () => {
    const pullLines = [
      { seq: 8, ts: '2026-01-02T03:04:05.000Z', line: 'pulling image app:1' },
      { seq: 9, ts: '2026-01-02T03:04:06.000Z', line: 'pulled image app:1' },
    ]
    const body = toContainerCreateBody(spec(), { ...options, log: { base: 9, pullLines } })
    expect(logPositionOf(body.Labels)).toEqual({ base: 9, pullLines })
    // Not in the workload's labels.
    expect(
      workloadStateOf({
        Config: { Labels: body.Labels },
        State: { Running: true, ExitCode: 0, StartedAt: '', FinishedAt: '' },
      }).labels,
    ).toEqual({ kind: 'pod' })
  })

  it('mounts persistent storage as a labelled named volume, network and platform as binds', () => {
    const body = toContainerCreateBody(
      spec({
        mounts: [
          { hostPath: '/v/p', containerPath: '/workspace', kind: 'persistent' },
          { hostPath: '/v/n', containerPath: '/runpod-volume', kind: 'network' },
          { hostPath: '/v/r', containerPath: '/ro', kind: 'network', readOnly: true },
          { hostPath: '/opt/podyard', containerPath: '/podyard', kind: 'platform' },
        ],
      }),
      options,
    )
    expect(body.HostConfig.Mounts).toEqual([
      {
        Type: 'volume',
        Source: 'podyard-srv1-pod1-workspace',
        Target: '/workspace',
        ReadOnly: false,
        VolumeOptions: {
          Labels: {
            'podyard.server': 'srv1',
            'podyard.workload': 'pod1',
            'podyard.mount': '/workspace',
          },
        },
      },
      { Type: 'bind', Source: '/v/n', Target: '/runpod-volume', ReadOnly: false },
      { Type: 'bind', Source: '/v/r', Target: '/ro', ReadOnly: true },
      // Podyard's own code is never writable by a workload, whatever the mount says.
      { Type: 'bind', Source: '/opt/podyard', Target: '/podyard', ReadOnly: true },
    ])
    expect(JSON.stringify(body)).not.toContain('/v/p')
  })

  it('names volumes per server, workload and container path, in Docker-safe characters', () => {
    expect(volumeName('srv1', 'pod1', '/workspace')).toBe('podyard-srv1-pod1-workspace')
    expect(volumeName('srv1', 'pod1', '/mnt/data.v2/')).toBe('podyard-srv1-pod1-mnt-data-v2')
    expect(volumeName('srv1', 'pod1', '/')).toBe('podyard-srv1-pod1-root')
    expect(volumeName('srv2', 'pod1', '/workspace')).not.toBe(
      volumeName('srv1', 'pod1', '/workspace'),
    )
  })

  it("mounts a former id's volume that the workload's last container had, and only podyard's", () => {
    const mounts: WorkloadSpec['mounts'] = [
      { hostPath: '/x', containerPath: '/workspace', kind: 'persistent' },
      { hostPath: '/y', containerPath: '/data', kind: 'persistent' },
      { hostPath: '/z', containerPath: '/cache', kind: 'persistent' },
    ]
    const previous = {
      Config: { Labels: {} },
      State: { Running: false, ExitCode: 0, StartedAt: '', FinishedAt: '' },
      Mounts: [
        { Type: 'volume', Name: 'podyard-old-pod1-workspace', Destination: '/workspace' },
        // An anonymous volume of the image, and this server's own name: neither is carried.
        { Type: 'volume', Name: '3f2a9c', Destination: '/data' },
        { Type: 'volume', Name: 'podyard-srv1-pod1-cache', Destination: '/cache' },
      ],
    } satisfies ContainerInspection
    const names = previousVolumeNames(spec({ mounts }), previous, ['old', 'older'])
    expect(names).toEqual({ '/workspace': 'podyard-old-pod1-workspace' })
    const body = toContainerCreateBody(spec({ mounts }), { ...options, volumeNames: names })
    expect(body.HostConfig.Mounts.map((m) => [m.Target, m.Source])).toEqual([
      ['/workspace', 'podyard-old-pod1-workspace'],
      ['/data', 'podyard-srv1-pod1-data'],
      ['/cache', 'podyard-srv1-pod1-cache'],
    ])
  })

  it('joins the named network under its aliases, and the default network without one', () => {
    const body = toContainerCreateBody(
      spec({ network: { name: 'acct-a', aliases: ['pod1.runpod.internal'] } }),
      options,
    )
    expect(networkName('srv1', 'acct-a')).toBe('podyard-srv1-acct-a')
    expect(body.HostConfig.NetworkMode).toBe('podyard-srv1-acct-a')
    expect(body.NetworkingConfig).toEqual({
      EndpointsConfig: { 'podyard-srv1-acct-a': { Aliases: ['pod1.runpod.internal'] } },
    })
    const plain = toContainerCreateBody(spec(), options)
    expect(plain.HostConfig).not.toHaveProperty('NetworkMode')
    expect(plain).not.toHaveProperty('NetworkingConfig')
  })

  it("shares the host's network when asked, ahead of a named network", () => {
    const body = toContainerCreateBody(
      spec({ hostNetwork: true, network: { name: 'acct-a', aliases: [] } }),
      options,
    )
    expect(body.HostConfig.NetworkMode).toBe('host')
    expect(body).not.toHaveProperty('NetworkingConfig')
  })

  it('publishes declared ports on their public host ports, http as tcp', () => {
    const body = toContainerCreateBody(
      spec({
        ports: [
          { private: 8888, protocol: 'http', public: 40001 },
          { private: 22, protocol: 'tcp', public: 40002 },
          { private: 53, protocol: 'udp', public: 40003 },
        ],
      }),
      options,
    )
    expect(body.ExposedPorts).toEqual({ '8888/tcp': {}, '22/tcp': {}, '53/udp': {} })
    expect(body.HostConfig.PortBindings).toEqual({
      '8888/tcp': [{ HostPort: '40001' }],
      '22/tcp': [{ HostPort: '40002' }],
      '53/udp': [{ HostPort: '40003' }],
    })
    // Inside its own network namespace the workload listens on the private port.
    expect(body.Env).toContain('RUNPOD_TCP_PORT_8888=8888')
    expect(body.Env).toContain('RUNPOD_TCP_PORT_22=22')
  })

  it('has no ports when none are declared', () => {
    const body = toContainerCreateBody(spec(), options)
    expect(body.ExposedPorts).toEqual({})
    expect(body.HostConfig.PortBindings).toEqual({})
  })

  it('limits CPU in nano-CPUs and memory in bytes', () => {
    const body = toContainerCreateBody(spec({ vcpus: 2, memoryGb: 4 }), options)
    expect(body.HostConfig.NanoCpus).toBe(2_000_000_000)
    expect(body.HostConfig.Memory).toBe(4 * 1024 ** 3)
    expect(
      toContainerCreateBody(spec({ vcpus: 0.5, memoryGb: 0.5 }), options).HostConfig,
    ).toMatchObject({
      NanoCpus: 500_000_000,
      Memory: 512 * 1024 ** 2,
    })
  })

  it('runs an init process so that SIGTERM reaches the command', () => {
    expect(toContainerCreateBody(spec(), options).HostConfig.Init).toBe(true)
  })

  it('requests the assigned GPUs from the nvidia driver, and nothing without GPUs', () => {
    expect(
      toContainerCreateBody(spec({ gpuIndices: [0, 2] }), options).HostConfig.DeviceRequests,
    ).toEqual([{ Driver: 'nvidia', DeviceIDs: ['0', '2'], Capabilities: [['gpu']] }])
    expect(toContainerCreateBody(spec({ gpuIndices: [0, 2] }), options).Env).toContain(
      'NVIDIA_VISIBLE_DEVICES=0,2',
    )
    expect(toContainerCreateBody(spec(), options).HostConfig).not.toHaveProperty('DeviceRequests')
    // The container sees its GPUs renumbered from 0: host indices would be wrong for CUDA.
    expect(
      toContainerCreateBody(spec({ gpuIndices: [0, 2] }), options).Env.some((e) =>
        e.startsWith('CUDA_VISIBLE_DEVICES='),
      ),
    ).toBe(false)
  })

  it('requests exactly the assigned GPUs by UUID where the engine reported them', () => {
    const uuids = ['GPU-aaaa', 'GPU-bbbb', 'GPU-cccc', 'GPU-dddd']
    const body = toContainerCreateBody(spec({ gpuIndices: [1, 3] }), {
      ...options,
      gpuUuids: uuids,
    })
    expect(body.HostConfig.DeviceRequests).toEqual([
      { Driver: 'nvidia', DeviceIDs: ['GPU-bbbb', 'GPU-dddd'], Capabilities: [['gpu']] },
    ])
    // The variable names the same devices, so a default nvidia runtime reading it agrees.
    expect(body.Env).toContain('NVIDIA_VISIBLE_DEVICES=GPU-bbbb,GPU-dddd')
    expect(body.Env.filter((e) => /^(CUDA|NVIDIA)_VISIBLE_DEVICES=/.test(e))).toHaveLength(1)
    // An index without a known UUID is requested by index.
    expect(
      toContainerCreateBody(spec({ gpuIndices: [0, 4] }), { ...options, gpuUuids: uuids })
        .HostConfig.DeviceRequests?.[0]?.DeviceIDs,
    ).toEqual(['GPU-aaaa', '4'])
    // Simulated GPUs are virtual indices, whatever an engine reported.
    const simulated = toContainerCreateBody(spec({ gpuIndices: [1] }), {
      ...options,
      simulatedGpus: true,
      gpuUuids: uuids,
    })
    expect(simulated.Env).toContain('NVIDIA_VISIBLE_DEVICES=1')
  })

  it('names simulated GPUs in the env, as the process driver does, and requests no device', () => {
    const simulated = { ...options, simulatedGpus: true }
    const body = toContainerCreateBody(spec({ gpuIndices: [1, 3] }), simulated)
    expect(body.HostConfig).not.toHaveProperty('DeviceRequests')
    expect(body.Env).toEqual(
      expect.arrayContaining(['CUDA_VISIBLE_DEVICES=1,3', 'NVIDIA_VISIBLE_DEVICES=1,3']),
    )
    const cpu = toContainerCreateBody(spec(), simulated)
    expect(cpu.Env.some((e) => /^(CUDA|NVIDIA)_VISIBLE_DEVICES=/.test(e))).toBe(false)
  })

  it('sizes the writable layer only where the engine enforces sizes', () => {
    expect(toContainerCreateBody(spec(), options).HostConfig).not.toHaveProperty('StorageOpt')
    expect(
      toContainerCreateBody(spec({ diskGb: 20 }), { ...options, diskLimit: true }).HostConfig
        .StorageOpt,
    ).toEqual({ size: '20G' })
  })

  it("caps the container's log with the json-file driver: two files of half the budget", () => {
    expect(toContainerCreateBody(spec(), options).HostConfig.LogConfig).toEqual({
      Type: 'json-file',
      Config: { 'max-size': String(25 * 1024 * 1024), 'max-file': '2' },
    })
    expect(
      toContainerCreateBody(spec(), { ...options, logMaxBytes: 1024 * 1024 }).HostConfig.LogConfig,
    ).toEqual({ Type: 'json-file', Config: { 'max-size': '524288', 'max-file': '2' } })
  })

  it('holds the container to what the workload rented: CPU quota, memory without swap, processes', () => {
    expect(
      toContainerCreateBody(spec({ vcpus: 2, memoryGb: 16 }), options).HostConfig,
    ).toMatchObject({
      NanoCpus: 2_000_000_000,
      Memory: 16 * 1024 ** 3,
      MemorySwap: 16 * 1024 ** 3,
      PidsLimit: 2 * PIDS_PER_VCPU,
    })
  })
})

describe('containerLimits', () => {
  it('gives PIDS_PER_VCPU processes per vCPU begun, at least one vCPU worth', () => {
    expect(PIDS_PER_VCPU).toBe(512)
    expect(pidsLimitOf(0.5)).toBe(512)
    expect(pidsLimitOf(1)).toBe(512)
    expect(pidsLimitOf(1.01)).toBe(1024)
    expect(pidsLimitOf(2)).toBe(1024)
    expect(pidsLimitOf(64)).toBe(64 * 512)
  })

  it('never lets swap add to the memory rented (MemorySwap equals Memory)', () => {
    const limits = containerLimits(spec({ memoryGb: 0.5 }), false)
    expect(limits.Memory).toBe(512 * 1024 ** 2)
    expect(limits.MemorySwap).toBe(limits.Memory)
  })

  it('refuses a workload that rented no vCPU or no memory: Docker reads 0 as unlimited', () => {
    expect(() => containerLimits(spec({ vcpus: 0 }), false)).toThrow(
      /0 vCPUs and 4 GB of memory: a container without them would run unlimited/,
    )
    expect(() => containerLimits(spec({ memoryGb: 0 }), false)).toThrow(/would run unlimited/)
    expect(() => containerLimits(spec({ vcpus: Number.NaN }), false)).toThrow(/unlimited/)
    // The smallest amounts there are still count.
    expect(containerLimits(spec({ vcpus: 0.01, memoryGb: 0.01 }), false)).toMatchObject({
      NanoCpus: 10_000_000,
      PidsLimit: PIDS_PER_VCPU,
    })
  })

  it('sizes the disk in whole GB as rented, only with diskLimit', () => {
    expect(containerLimits(spec({ diskGb: 1 }), true).StorageOpt).toEqual({ size: '1G' })
    expect(containerLimits(spec({ diskGb: 1 }), false)).not.toHaveProperty('StorageOpt')
  })

  it('limits writes to the disk per vCPU begun where the engine throttles them, leaving out a rate of 0', () => {
    const rule = { mibPerSecondPerVcpu: 64, iopsPerVcpu: 500 }
    expect(
      containerLimits(spec({ vcpus: 1.5 }), false, { device: '/dev/vda', rule }),
    ).toMatchObject({
      BlkioDeviceWriteBps: [{ Path: '/dev/vda', Rate: 2 * 64 * 1024 * 1024 }],
      BlkioDeviceWriteIOps: [{ Path: '/dev/vda', Rate: 1000 }],
    })
    const bandwidthOnly = containerLimits(spec({ vcpus: 1 }), false, {
      device: '/dev/nvme0n1',
      rule: { mibPerSecondPerVcpu: 10, iopsPerVcpu: 0 },
    })
    expect(bandwidthOnly.BlkioDeviceWriteBps).toEqual([
      { Path: '/dev/nvme0n1', Rate: 10 * 1024 * 1024 },
    ])
    expect(bandwidthOnly).not.toHaveProperty('BlkioDeviceWriteIOps')
    expect(containerLimits(spec({}), false)).not.toHaveProperty('BlkioDeviceWriteBps')
  })

  it('never puts registry credentials in the body', () => {
    const body = toContainerCreateBody(
      spec({ registryAuth: { username: 'u', password: 'secret-pw' } }),
      options,
    )
    expect(JSON.stringify(body)).not.toContain('secret-pw')
  })
})

it('the stderr merge leaves a command with its own redirections working', async () => {
  const { spawnSync } = await import('node:child_process')
  const run = spawnSync('/bin/sh', ['-c', `${MERGE_STDERR}echo one; echo two >&2; exit 4`])
  expect(run.stdout.toString()).toBe('one\ntwo\n')
  expect(run.stderr.toString()).toBe('')
  expect(run.status).toBe(4)
})

describe('registry auth', () => {
  it('names the registry host of the image, or Docker Hub', () => {
    expect(registryOf('ghcr.io/org/app:1')).toBe('ghcr.io')
    expect(registryOf('localhost:5000/app')).toBe('localhost:5000')
    expect(registryOf('localhost/app')).toBe('localhost')
    expect(registryOf('runpod/pytorch:2.4')).toBe('https://index.docker.io/v1/')
    expect(registryOf('ubuntu')).toBe('https://index.docker.io/v1/')
  })

  it('encodes the auth config as base64url JSON for X-Registry-Auth', () => {
    const header = registryAuthHeader('ghcr.io/org/app:1', { username: 'me', password: 'p?>/+' })
    expect(header).not.toMatch(/[+/]/)
    // Padded whatever the length: the engine reads an unpadded header as no credentials.
    for (const password of ['a', 'ab', 'abc']) {
      const padded = registryAuthHeader('ghcr.io/org/app:1', { username: 'me', password })
      expect(padded.length % 4).toBe(0)
    }
    expect(JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))).toEqual({
      username: 'me',
      password: 'p?>/+',
      serveraddress: 'ghcr.io',
    })
  })

  it('pulls the latest tag of an untagged reference', () => {
    expect(withDefaultTag('ubuntu')).toBe('ubuntu:latest')
    expect(withDefaultTag('localhost:5000/app')).toBe('localhost:5000/app:latest')
    expect(withDefaultTag('runpod/base:1')).toBe('runpod/base:1')
    expect(withDefaultTag('app@sha256:abc')).toBe('app@sha256:abc')
  })
})

describe('logPositionOf', () => {
  it('reads a container without the labels, or with damaged ones, as starting at 0', () => {
    expect(logPositionOf({})).toEqual({ base: 0, pullLines: [] })
    expect(logPositionOf(null)).toEqual({ base: 0, pullLines: [] })
    expect(
      logPositionOf({ 'podyard.log-base': '-3', 'podyard.pull-log': '{"not":"a list"' }),
    ).toEqual({ base: 0, pullLines: [] })
    expect(
      logPositionOf({ 'podyard.pull-log': '[{"seq":1,"ts":"t","line":"ok"},{"seq":"x"}]' }),
    ).toEqual({ base: 0, pullLines: [{ seq: 1, ts: 't', line: 'ok' }] })
  })

  it('keeps the last MAX_PULL_LOG_LINES pull lines, with their numbers', () => {
    const lines = Array.from({ length: MAX_PULL_LOG_LINES + 5 }, (_, i) => ({
      seq: i + 1,
      ts: '2026-01-02T03:04:05.000Z',
      line: `layer ${i}: Pull complete`,
    }))
    const kept = logPositionOf({ 'podyard.pull-log': pullLogLabel(lines) }).pullLines
    expect(kept).toHaveLength(MAX_PULL_LOG_LINES)
    expect(kept[0]!.seq).toBe(6)
    expect(kept.at(-1)!.seq).toBe(MAX_PULL_LOG_LINES + 5)
  })
})

describe('containerName', () => {
  it('is unique per server and workload, in the characters Docker allows', () => {
    expect(containerName('srv1', 'pod1')).toBe('podyard-srv1-pod1')
    expect(containerName('a b', 'c/d')).toBe('podyard-a_b-c_d')
  })
})

describe('workloadStateOf', () => {
  const labels = { kind: 'pod', 'podyard.server': 'srv1', 'podyard.workload': 'pod1' }
  function inspection(state: Partial<ContainerInspection['State']>): ContainerInspection {
    return {
      Config: { Labels: labels },
      State: {
        Running: false,
        ExitCode: 0,
        StartedAt: '2026-01-02T03:04:05.123456789Z',
        FinishedAt: '0001-01-01T00:00:00Z',
        ...state,
      },
    }
  }

  it('reports a running container without its podyard labels', () => {
    expect(workloadStateOf(inspection({ Running: true }))).toEqual({
      id: 'pod1',
      phase: 'running',
      startedAt: '2026-01-02T03:04:05.123Z',
      exitCode: null,
      finishedAt: null,
      labels: { kind: 'pod' },
    })
  })

  it("returns the spec's labels only, not those the image added", () => {
    const state = workloadStateOf({
      Config: {
        Labels: {
          ...labels,
          'org.opencontainers.image.version': '22.04',
          'podyard.spec-labels': '["kind"]',
        },
      },
      State: { Running: true, ExitCode: 0, StartedAt: '', FinishedAt: '' },
    })
    expect(state.labels).toEqual({ kind: 'pod' })
  })

  it('reports an exited container with its exit code and finish time', () => {
    expect(
      workloadStateOf(inspection({ ExitCode: 3, FinishedAt: '2026-01-02T03:05:00.5Z' })),
    ).toMatchObject({ phase: 'exited', exitCode: 3, finishedAt: '2026-01-02T03:05:00.500Z' })
  })

  it('reports death by a signal (128 + n) as a null exit code', () => {
    expect(exitCodeOf(0)).toBe(0)
    expect(exitCodeOf(128)).toBe(128)
    expect(exitCodeOf(137)).toBeNull()
    expect(exitCodeOf(143)).toBeNull()
    expect(exitCodeOf(255)).toBe(255)
  })

  it('reports an exited container the kernel killed for its memory limit as out of memory', () => {
    const killed = workloadStateOf(inspection({ ExitCode: 137, OOMKilled: true }))
    expect(killed).toMatchObject({ phase: 'exited', exitCode: null, outOfMemory: true })
    expect(workloadStateOf(inspection({ ExitCode: 137, OOMKilled: false }))).not.toHaveProperty(
      'outOfMemory',
    )
    // Still running (a child was killed, the command goes on): told when it exits.
    expect(workloadStateOf(inspection({ Running: true, OOMKilled: true }))).not.toHaveProperty(
      'outOfMemory',
    )
  })
})

describe('pull progress and failures', () => {
  it('keeps layer milestones and drops byte-level progress', () => {
    expect(pullProgressLine({ status: 'Pulling from library/busybox', id: '1' })).toBe(
      '1: Pulling from library/busybox',
    )
    expect(pullProgressLine({ status: 'Pull complete', id: 'abc123' })).toBe(
      'abc123: Pull complete',
    )
    expect(pullProgressLine({ status: 'Digest: sha256:00' })).toBe('Digest: sha256:00')
    for (const status of ['Downloading', 'Extracting', 'Waiting', 'Verifying Checksum']) {
      expect(
        pullProgressLine({ status, id: 'abc123', progress: '[==>  ] 1MB/9MB' }),
      ).toBeUndefined()
    }
    expect(pullProgressLine({})).toBeUndefined()
  })

  it('says what a failure means, with the engine words, and masks the password', () => {
    const auth = { username: 'u', password: 'hunter2-secret' }
    expect(
      pullFailureMessage(
        'reg.example.com/a/b:1',
        new Error(
          '(HTTP code 500) server error - Head "https://reg.example.com/v2/a/b/manifests/1": unauthorized: authentication required',
        ),
        auth,
      ),
    ).toBe(
      "could not pull image reg.example.com/a/b:1: the registry refused the pod's registry credentials " +
        '(Head "https://reg.example.com/v2/a/b/manifests/1": unauthorized: authentication required)',
    )
    expect(
      pullFailureMessage('a/b:1', new Error('unauthorized: bad hunter2-secret'), auth),
    ).not.toContain('hunter2-secret')
    expect(pullFailureMessage('a/b:1', new Error('unauthorized: authentication required'))).toMatch(
      /: the registry wants credentials \(set the pod's container registry auth\)/,
    )
    expect(
      pullFailureMessage(
        'a/b:9',
        new Error('(HTTP code 404) unexpected - manifest for a/b:9 not found: manifest unknown'),
      ),
    ).toBe(
      'could not pull image a/b:9: no such image in its registry (manifest for a/b:9 not found: manifest unknown)',
    )
    expect(pullFailureMessage('a/b:1', new Error('dial tcp: lookup x: no such host'))).toBe(
      'could not pull image a/b:1: the pull failed (dial tcp: lookup x: no such host)',
    )
  })
})
