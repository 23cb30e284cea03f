import { describe, expect, it } from 'vitest'
import type { WorkloadSpec } from '../driver.js'
import {
  containerLimits,
  IDLE_CMD,
  logPositionOf,
  networkName,
  PIDS_PER_VCPU,
  pidsLimitOf,
  previousVolumeNames,
  toContainerCreateBody,
  volumeName,
  workloadStateOf,
  type ContainerInspection,
} from './container-spec.js'

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
