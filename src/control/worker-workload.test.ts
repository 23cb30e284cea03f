import { describe, expect, it } from 'vitest'
import type { Endpoint } from '../domain/serverless/endpoint.js'
import type { ManagedWorker } from '../domain/serverless/worker.js'
import { workerWorkloadOf } from './worker-workload.js'

const endpoint: Endpoint = {
  id: 'ep4m7x2k9q0a1b',
  accountId: 'acct_1',
  name: 'sdxl',
  type: 'QUEUE',
  templateId: null,
  image: 'my/sdxl:1',
  args: 'python3 handler.py',
  disk: 20,
  env: { MODEL: 'sdxl', RUNPOD_POD_ID: 'spoofed' },
  ports: [],
  registry: null,
  gpu: {
    pools: ['ADA_24'],
    excludedTypes: [],
    count: 2,
    allowedCudaVersions: [],
    minCudaVersion: null,
  },
  cpu: null,
  workers: { min: 0, max: 3, idleTimeout: 5 },
  scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
  dataCenterIds: [],
  networkVolumes: ['vol1'],
  timeout: 300_000,
  flashboot: 'OFF',
  version: 3,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
}

const worker: ManagedWorker = {
  id: 'wk9q0a1b2c3d4e',
  endpointId: endpoint.id,
  accountId: 'acct_1',
  version: 3,
  keyGeneration: 1,
  phase: 'STARTING',
  reason: null,
  hostId: 'us-ks-2-rtx4090-1',
  dataCenterId: 'US-KS-2',
  gpuTypeId: 'NVIDIA GeForce RTX 4090',
  cpuFlavorId: null,
  gpuCount: 2,
  gpuIndices: [1, 2],
  vcpus: 32,
  memoryGb: 124,
  image: 'my/sdxl:1',
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: '2026-01-01T00:00:01.000Z',
  phaseChangedAt: '2026-01-01T00:00:01.000Z',
}

describe('workerWorkloadOf', () => {
  it('gives a worker what runpod-python needs to find this server, and its volume', () => {
    const spec = workerWorkloadOf(endpoint, worker, {
      baseUrl: 'http://10.0.0.5:8080/',
      workerKey: 'pydw_key',
      pingIntervalMs: 10_000,
      diskPath: '/data/workers/wk9q0a1b2c3d4e/disk',
      networkVolume: { id: 'vol1', path: '/data/volumes/vol1' },
    })
    const base = 'http://10.0.0.5:8080/v2/ep4m7x2k9q0a1b'
    const gpu = 'gpu=NVIDIA%20GeForce%20RTX%204090'
    expect(spec.env).toEqual({
      MODEL: 'sdxl',
      RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?${gpu}`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?${gpu}`,
      RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?${gpu}`,
      RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID`,
      // The platform's values win over the endpoint's env.
      RUNPOD_POD_ID: 'wk9q0a1b2c3d4e',
      RUNPOD_POD_HOSTNAME: 'wk9q0a1b2c3d4e',
      RUNPOD_AI_API_KEY: 'pydw_key',
      RUNPOD_ENDPOINT_ID: 'ep4m7x2k9q0a1b',
      RUNPOD_PING_INTERVAL: '10000',
      RUNPOD_GPU_COUNT: '2',
      RUNPOD_CPU_COUNT: '32',
      RUNPOD_DC_ID: 'US-KS-2',
      RUNPOD_VOLUME_ID: 'vol1',
    })
    expect(spec).toMatchObject({
      id: 'wk9q0a1b2c3d4e',
      image: 'my/sdxl:1',
      command: 'python3 handler.py',
      diskGb: 20,
      containerDiskPath: '/data/workers/wk9q0a1b2c3d4e/disk',
      mounts: [
        { hostPath: '/data/volumes/vol1', containerPath: '/runpod-volume', kind: 'network' },
      ],
      ports: [],
      gpuIndices: [1, 2],
      vcpus: 32,
      memoryGb: 124,
      labels: { 'podyard.kind': 'worker', 'podyard.endpoint': endpoint.id, 'podyard.version': '3' },
      tenant: `account-${endpoint.accountId}`,
    })
  })

  it("runs RunPod's JSON dockerArgs as the image's entrypoint and command", () => {
    const spec = workerWorkloadOf(
      { ...endpoint, args: '{"cmd": ["python3", "-u", "handler.py"]}' },
      worker,
      {
        baseUrl: 'http://127.0.0.1:8080',
        workerKey: 'k',
        pingIntervalMs: 1000,
        diskPath: '/d',
      },
    )
    expect(spec.command).toBeNull()
    expect(spec.imageCommand).toEqual({ cmd: ['python3', '-u', 'handler.py'] })
  })

  it('hides the host GPUs from a CPU worker', () => {
    const cpuWorker = {
      ...worker,
      gpuTypeId: null,
      cpuFlavorId: 'cpu3c',
      gpuCount: 0,
      gpuIndices: [],
    }
    const spec = workerWorkloadOf(
      { ...endpoint, gpu: null, cpu: [{ id: 'cpu3c', vcpuCount: 2, memory: 4 }] },
      cpuWorker,
      {
        baseUrl: 'http://127.0.0.1:8080',
        workerKey: 'k',
        pingIntervalMs: 1000,
        diskPath: '/d',
      },
    )
    expect(spec.env).toMatchObject({
      CUDA_VISIBLE_DEVICES: '',
      NVIDIA_VISIBLE_DEVICES: 'void',
      RUNPOD_GPU_COUNT: '0',
      RUNPOD_WEBHOOK_GET_JOB: 'http://127.0.0.1:8080/v2/ep4m7x2k9q0a1b/job-take/$ID?gpu=cpu3c',
    })
    expect(spec.mounts).toEqual([])
    expect(spec).not.toHaveProperty('hostNetwork')
  })

  it("joins the host's network only when told to (a loopback job API on this machine)", () => {
    const spec = workerWorkloadOf(endpoint, worker, {
      baseUrl: 'http://127.0.0.1:8080',
      workerKey: 'k',
      pingIntervalMs: 1000,
      diskPath: '/d',
      hostNetwork: true,
    })
    expect(spec).toMatchObject({ hostNetwork: true, ports: [] })
  })
})
