import { describe, expect, it } from 'vitest'
import type { Pod } from '../domain/pods/pod.js'
import { podDirectories, workloadOf } from './pod-workload.js'

const base: Pod = {
  id: 'pod1',
  accountId: 'acct',
  name: 'p',
  image: 'img',
  args: '',
  disk: 10,
  ports: ['8080/http'],
  env: { MINE: '1', RUNPOD_POD_ID: 'spoofed' },
  registry: null,
  compute: { kind: 'gpu', gpuTypeId: 'NVIDIA L4', gpuCount: 2 },
  mounts: { persistent: { size: 20, path: '/workspace' } },
  cloud: 'SECURE',
  dataCenterIds: [],
  dataCenterId: 'EU-RO-1',
  hostId: 'h1',
  templateId: null,
  locked: false,
  globalNetworking: true,
  globalIp: '10.0.0.2',
  status: 'PROVISIONING',
  statusReason: null,
  hourlyPrice: 1,
  gpuIndices: [1, 3],
  portMappings: [],
  generation: 4,
  crashRestarts: 0,
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: null,
  lastStatusChange: '2026-01-01T00:00:00.000Z',
  terminatedAt: null,
  version: 1,
}
const host = { dataCenterId: 'EU-RO-1', publicIp: '203.0.113.7', vcpus: 16, memoryGb: 64 }
const dirs = podDirectories('/data', 'pod1')

describe('workloadOf', () => {
  it("runs RunPod's JSON args as the image's entrypoint and command, a shell line as before", () => {
    const json = {
      ...base,
      args: '{"cmd": ["echo hi && sleep 1"], "entrypoint": ["/bin/sh", "-c"]}',
    }
    const spec = workloadOf(json, dirs, host, [])
    expect(spec.command).toBeNull()
    expect(spec.imageCommand).toEqual({
      cmd: ['echo hi && sleep 1'],
      entrypoint: ['/bin/sh', '-c'],
    })
    const shell = workloadOf({ ...base, args: 'sleep 600' }, dirs, host, [])
    expect(shell.command).toBe('sleep 600')
    expect(shell).not.toHaveProperty('imageCommand')
  })

  it("gives the account's SSH keys as PUBLIC_KEY unless the pod's env sets its own", () => {
    const keys = 'ssh-ed25519 AAAAC3Nza ada@laptop'
    expect(workloadOf(base, dirs, host, [], { publicKey: keys }).env.PUBLIC_KEY).toBe(keys)
    const own = { ...base, env: { PUBLIC_KEY: 'ssh-rsa AAAAB3 mine' } }
    expect(workloadOf(own, dirs, host, [], { publicKey: keys }).env.PUBLIC_KEY).toBe(
      'ssh-rsa AAAAB3 mine',
    )
    expect(workloadOf(base, dirs, host, []).env).not.toHaveProperty('PUBLIC_KEY')
  })

  it('gives the pod the variables RunPod images read, its own winning over none of them', () => {
    const spec = workloadOf(base, dirs, host, [{ private: 8080, public: 41000, type: 'http' }], {
      networkVolumePath: '/data/volumes/v1',
      registryAuth: { username: 'u', password: 'p' },
    })
    expect(spec.env).toEqual({
      MINE: '1',
      RUNPOD_POD_ID: 'pod1',
      RUNPOD_DC_ID: 'EU-RO-1',
      RUNPOD_GPU_COUNT: '2',
      RUNPOD_CPU_COUNT: '16',
      RUNPOD_PUBLIC_IP: '203.0.113.7',
      RUNPOD_TCP_PORT_8080: '41000',
      PODYARD_GLOBAL_IP: '10.0.0.2',
    })
    expect(spec).toMatchObject({
      id: 'pod1',
      command: null,
      containerDiskPath: '/data/pods/pod1/disk',
      gpuIndices: [1, 3],
      vcpus: 16,
      memoryGb: 64,
      ports: [{ private: 8080, public: 41000, protocol: 'http' }],
      mounts: [
        {
          hostPath: '/data/pods/pod1/persistent',
          containerPath: '/workspace',
          kind: 'persistent',
          // Its rented size: the process driver bounds the volume to it.
          sizeGb: 20,
        },
      ],
      labels: { 'podyard.kind': 'pod', 'podyard.generation': '4' },
      tenant: 'account-acct',
      registryAuth: { username: 'u', password: 'p' },
    })
  })

  it("joins its account's private network as <pod_id>.runpod.internal with globalNetworking", () => {
    expect(workloadOf(base, dirs, host, []).network).toEqual({
      name: 'account-acct',
      aliases: ['pod1.runpod.internal'],
      address: '10.0.0.2',
    })
    const other = { ...base, id: 'pod2', accountId: 'acct2' }
    expect(workloadOf(other, dirs, host, []).network?.name).toBe('account-acct2')
    const plain = { ...base, globalNetworking: false, globalIp: null }
    expect(workloadOf(plain, dirs, host, [])).not.toHaveProperty('network')
  })

  it('hides every GPU of the host from a CPU pod, and mounts its network volume', () => {
    const cpuPod: Pod = {
      ...base,
      compute: { kind: 'cpu', flavorId: 'cpu3c', vcpuCount: 2, memoryGb: 4 },
      mounts: { network: [{ volumeId: 'v1', path: '/data' }] },
      gpuIndices: [],
      args: 'echo hi',
    }
    const spec = workloadOf(cpuPod, dirs, { ...host, vcpus: 2, memoryGb: 4 }, [], {
      networkVolumePath: '/data/volumes/v1',
    })
    expect(spec.env).toMatchObject({
      CUDA_VISIBLE_DEVICES: '',
      NVIDIA_VISIBLE_DEVICES: 'void',
      RUNPOD_GPU_COUNT: '0',
    })
    expect(spec.command).toBe('echo hi')
    expect(spec.mounts).toEqual([
      { hostPath: '/data/volumes/v1', containerPath: '/data', kind: 'network' },
    ])
    // On this machine's own storage the volume comes with its size, for a driver to bound it.
    const bounded = workloadOf(cpuPod, dirs, { ...host, vcpus: 2, memoryGb: 4 }, [], {
      networkVolumePath: '/data/volumes/v1',
      networkVolumeSizeGb: 20,
    })
    expect(bounded.mounts).toEqual([
      { hostPath: '/data/volumes/v1', containerPath: '/data', kind: 'network', sizeGb: 20 },
    ])
  })
})
