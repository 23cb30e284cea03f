import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import type { Host } from '../domain/catalog/fleet.js'
import type { SampledGpu } from '../runtime/gpu/gpu-sampler.js'
import type { NvidiaSmiSource } from '../runtime/gpu/nvidia-smi-source.js'
import type { HostRuntime } from '../runtime/host-runtime.js'
import { NoRuntimeDriver } from '../runtime/no-runtime-driver.js'
import { RemoteGpuSampling } from './remote-gpu-sampling.js'

const LINE = '0, GPU-a, 00000000:19:00.0, 42, 1, 10, 81559, 40, 70.0, 0x1, 0, No'

/** nvidia-smi on a host's machine, in memory: prints LINE every 20 ms while followed. */
class InMemoryNvidiaSmi implements NvidiaSmiSource {
  following = 0
  constructor(readonly where: string) {}
  follow(_args: string[], onLine: (line: string) => void) {
    this.following++
    const timer = setInterval(() => onLine(LINE), 20)
    return {
      stop: () => {
        this.following--
        clearInterval(timer)
      },
    }
  }
  run(): Promise<string> {
    return Promise.reject(new Error('no remapped rows here'))
  }
}

const host = (id: string, more: Partial<Host> = {}): Host => ({
  id,
  dataCenterId: 'EU-RO-1',
  cloud: 'SECURE',
  gpu: { typeId: 'NVIDIA H100 80GB HBM3', count: 1, cudaVersion: '12.8' },
  vcpus: 8,
  memoryGb: 32,
  diskGb: 100,
  driver: 'docker',
  cpuFlavors: [],
  simulated: false,
  docker: { url: `ssh://podyard@${id}`, sshKey: '/k', knownHosts: '/kh' },
  ...more,
})

describe('RemoteGpuSampling', () => {
  let sampling: RemoteGpuSampling | undefined
  afterEach(() => sampling?.stop())

  it('samples each real GPU host whose engine reported GPUs, and stops as hosts change', async () => {
    const sources = new Map(['a', 'b', 'sim', 'cpu'].map((id) => [id, new InMemoryNvidiaSmi(id)]))
    let hosts: Host[] = [
      host('a'),
      host('b'),
      host('sim', { simulated: true }),
      host('cpu', { gpu: null }),
      host('no-gpus-reported'),
    ]
    const rounds: Array<[string, SampledGpu[]]> = []
    const runtimeOf = (hostId: string): HostRuntime => ({
      hostId,
      driver: new NoRuntimeDriver('test'),
      where: hostId,
      remote: true,
      probe: async () => null,
      ...(sources.has(hostId) ? { nvidiaSmi: sources.get(hostId)! } : {}),
    })
    sampling = new RemoteGpuSampling({
      hosts: () => hosts,
      runtimeOf,
      reportedGpus: (hostId) => (hostId === 'no-gpus-reported' ? 0 : 1),
      onRound: (hostId, round) => rounds.push([hostId, round]),
      logger: pino({ level: 'silent' }),
      intervalMs: 20,
    })
    sampling.start()
    await expect.poll(() => sampling!.sampled.sort()).toEqual(['a', 'b'])
    await expect.poll(() => new Set(rounds.map(([id]) => id))).toEqual(new Set(['a', 'b']))
    expect(rounds.find(([id]) => id === 'a')![1][0]).toMatchObject({
      uuid: 'GPU-a',
      utilPercent: 42,
    })

    hosts = hosts.filter((h) => h.id !== 'b')
    await expect.poll(() => sampling!.sampled).toEqual(['a'])
    expect(sources.get('b')!.following).toBe(0)

    await sampling.stop()
    expect(sampling.sampled).toEqual([])
    expect(sources.get('a')!.following).toBe(0)
  })
})
