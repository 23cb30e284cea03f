import { describe, expect, it } from 'vitest'
import type { Host } from '../catalog/fleet.js'
import type { HostFacts, ReportedGpu } from './host-facts.js'
import { offeredHost } from './offered-host.js'

const host: Host = {
  id: 'gpu-node-2',
  dataCenterId: 'EU-RO-1',
  cloud: 'SECURE',
  gpu: { typeId: 'NVIDIA H100 80GB HBM3', count: 2, cudaVersion: '12.4' },
  vcpus: 32,
  memoryGb: 256,
  diskGb: 500,
  driver: 'docker',
  cpuFlavors: [],
  simulated: false,
}

const h100 = (index: number): ReportedGpu => ({
  index,
  uuid: `GPU-0000000${index}-aaaa-bbbb-cccc-dddddddddddd`,
  name: 'NVIDIA H100 80GB HBM3',
  typeId: 'NVIDIA H100 80GB HBM3',
  memoryMib: 81559,
  driverVersion: '550.54.15',
})

const facts: HostFacts = {
  name: 'gpu-node-2',
  cpus: 32,
  memoryGb: 251.5,
  serverVersion: '27.0.0',
  runtimes: ['nvidia', 'runc'],
  gpus: [h100(0), h100(1)],
  cudaVersion: '12.4',
}

describe('offeredHost', () => {
  it('offers the declaration when the engine reports all of it', () => {
    expect(offeredHost(host, facts)).toEqual({ host, notes: [] })
    // No facts (process driver, not probed yet): as declared.
    expect(offeredHost(host, null)).toEqual({ host, notes: [] })
  })

  it('offers no GPUs without the nvidia runtime, and says why', () => {
    const { host: offered, notes } = offeredHost(host, {
      ...facts,
      runtimes: ['runc'],
      gpus: undefined,
    })
    const why =
      'declares 2 × NVIDIA H100 80GB HBM3 but its engine has no nvidia runtime: GPUs not offered'
    expect(notes).toEqual([why])
    expect(offered.gpu).toBeNull()
    expect(offered.withheldGpu).toEqual({ typeId: 'NVIDIA H100 80GB HBM3', reason: why })
    // The rest of the host is still offered (CPU pods, where it offers flavors).
    expect(offered.vcpus).toBe(32)
  })

  it('offers no GPUs when the probe could not read them', () => {
    const { host: offered, notes } = offeredHost(host, {
      ...facts,
      gpus: undefined,
      gpuProbeError: 'image ubuntu:24.04 could not be pulled',
    })
    expect(offered.gpu).toBeNull()
    expect(notes).toEqual([
      'declares 2 × NVIDIA H100 80GB HBM3 but its GPUs could not be read (image ubuntu:24.04 could not be pulled): GPUs not offered',
    ])
  })

  it('offers only the reported run of the declared type from index 0, and the driver CUDA', () => {
    const one = offeredHost(host, { ...facts, gpus: [h100(0)], cudaVersion: '12.8' })
    expect(one.host.gpu).toEqual({ typeId: 'NVIDIA H100 80GB HBM3', count: 1, cudaVersion: '12.8' })
    expect(one.notes).toEqual([
      'declares 2 × NVIDIA H100 80GB HBM3, its engine reports 1 × NVIDIA H100 80GB HBM3: offers 1',
      'declares CUDA 12.4, its driver has 12.8',
    ])
    // GPU 0 of another type: the declared GPUs are not the ones there.
    const other = offeredHost(host, {
      ...facts,
      gpus: [{ ...h100(0), name: 'NVIDIA L4', typeId: 'NVIDIA L4' }, h100(1)],
    })
    expect(other.host.gpu).toBeNull()
    expect(other.notes[0]).toBe(
      'declares 2 × NVIDIA H100 80GB HBM3 but its engine reports 1 × NVIDIA L4, 1 × NVIDIA H100 80GB HBM3: GPUs not offered',
    )
    // More GPUs than declared: the declaration is the ceiling.
    const more = offeredHost(host, { ...facts, gpus: [h100(0), h100(1), h100(2)] })
    expect(more).toEqual({ host, notes: [] })
  })

  it('lowers vCPUs and memory to what the engine has, memory with 5% of slack', () => {
    const { host: offered, notes } = offeredHost(host, { ...facts, cpus: 2, memoryGb: 23.5 })
    expect(offered).toMatchObject({ vcpus: 2, memoryGb: 23, gpu: host.gpu })
    expect(offered.withheldGpu).toBeUndefined()
    expect(notes).toEqual([
      'declares 32 vCPUs, its engine has 2: offers 2',
      'declares 256 GB of memory, its engine has 23.5 GB: offers 23 GB',
    ])
    // 256 declared, 251.5 reported: within the slack, as declared.
    expect(offeredHost(host, facts).host.memoryGb).toBe(256)
  })

  it('keeps the virtual GPUs of a simulated host, lowering only its vCPUs', () => {
    const simulated = { ...host, simulated: true, vcpus: 8 }
    const { host: offered, notes } = offeredHost(simulated, {
      ...facts,
      runtimes: ['runc'],
      gpus: undefined,
      cpus: 2,
    })
    expect(offered.gpu).toEqual(host.gpu)
    expect(offered.vcpus).toBe(2)
    expect(notes).toEqual(['declares 8 vCPUs, its engine has 2: offers 2'])
  })
})
