import type { Cloud, Fleet } from './fleet.js'
import { parseFleet } from './fleet-parse.js'
import type { FleetFile } from './fleet-schema.js'
import type { CudaVersion } from './gpu-types.js'

type HostEntry = NonNullable<FleetFile['hosts']>[number]

/** Per-GPU CPU, memory and disk of the simulated machines, roughly what clouds pair them with. */
const CONSUMER = { vcpus: 16, memoryGb: 62, diskGb: 500 }
const COMMUNITY_RIG = { vcpus: 8, memoryGb: 32, diskGb: 250 }
const DATACENTER = { vcpus: 24, memoryGb: 250, diskGb: 1000 }

function gpuHost(
  id: string,
  dataCenterId: string,
  cloud: Cloud,
  typeId: string,
  count: number,
  cudaVersion: CudaVersion | null,
  perGpu: { vcpus: number; memoryGb: number; diskGb: number },
): HostEntry {
  return {
    id,
    dataCenterId,
    cloud,
    gpu: cudaVersion === null ? { typeId, count } : { typeId, count, cudaVersion },
    vcpus: perGpu.vcpus * count,
    memoryGb: perGpu.memoryGb * count,
    diskGb: perGpu.diskGb * count,
  }
}

function cpuHost(
  id: string,
  dataCenterId: string,
  cpuFlavors: string[],
  vcpus: number,
  memoryGb: number,
): HostEntry {
  return { id, dataCenterId, cloud: 'SECURE', cpuFlavors, vcpus, memoryGb, diskGb: 2000 }
}

/**
 * The fleet `serve` uses unless told otherwise: simulated hosts in four real RunPod data
 * centers, two with global networking and two without, both clouds, eleven GPU types and CPU
 * hosts of both generations, so that every catalog and scheduling path has something to show.
 */
export const DEMO_FLEET_FILE: FleetFile = {
  dataCenters: [
    {
      id: 'US-KS-2',
      name: 'US Kansas 2',
      region: 'NORTH_AMERICA',
      globalNetwork: true,
      networkVolumeTypes: ['STANDARD', 'HIGH_PERFORMANCE'],
      compliance: ['ISO_IEC_27001', 'SOC_2_TYPE_2', 'HIPAA'],
    },
    {
      id: 'EU-RO-1',
      name: 'EU Romania 1',
      region: 'EUROPE',
      globalNetwork: true,
      networkVolumeTypes: ['STANDARD'],
      compliance: ['GDPR', 'ISO_IEC_27001', 'SOC_2_TYPE_2'],
    },
    {
      id: 'CA-MTL-1',
      name: 'CA Montreal 1',
      region: 'NORTH_AMERICA',
      globalNetwork: false,
      networkVolumeTypes: ['STANDARD'],
      compliance: ['ISO_IEC_27001', 'RENEWABLE'],
    },
    {
      id: 'EUR-IS-1',
      name: 'EUR Iceland 1',
      region: 'EUROPE',
      globalNetwork: false,
      networkVolumeTypes: ['STANDARD', 'HIGH_PERFORMANCE'],
      compliance: ['GDPR', 'ISO_14001', 'RENEWABLE'],
    },
  ],
  hosts: [
    gpuHost(
      'us-ks-2-rtx4090-1',
      'US-KS-2',
      'SECURE',
      'NVIDIA GeForce RTX 4090',
      4,
      '12.8',
      CONSUMER,
    ),
    gpuHost('us-ks-2-h100-1', 'US-KS-2', 'SECURE', 'NVIDIA H100 80GB HBM3', 8, '12.9', DATACENTER),
    gpuHost('us-ks-2-a6000-1', 'US-KS-2', 'SECURE', 'NVIDIA RTX A6000', 2, '12.4', CONSUMER),
    gpuHost(
      'us-ks-2-rtx3090-c1',
      'US-KS-2',
      'COMMUNITY',
      'NVIDIA GeForce RTX 3090',
      2,
      '12.2',
      COMMUNITY_RIG,
    ),
    cpuHost('us-ks-2-cpu-1', 'US-KS-2', ['cpu3c', 'cpu3g', 'cpu3m'], 64, 512),

    gpuHost('eu-ro-1-a100-1', 'EU-RO-1', 'SECURE', 'NVIDIA A100-SXM4-80GB', 8, '12.4', DATACENTER),
    gpuHost('eu-ro-1-l40s-1', 'EU-RO-1', 'SECURE', 'NVIDIA L40S', 4, '12.8', CONSUMER),
    gpuHost(
      'eu-ro-1-rtx5090-1',
      'EU-RO-1',
      'SECURE',
      'NVIDIA GeForce RTX 5090',
      2,
      '12.8',
      CONSUMER,
    ),
    cpuHost('eu-ro-1-cpu-1', 'EU-RO-1', ['cpu5c', 'cpu5g', 'cpu5m'], 64, 512),

    gpuHost('ca-mtl-1-a40-1', 'CA-MTL-1', 'SECURE', 'NVIDIA A40', 4, '12.2', CONSUMER),
    gpuHost(
      'ca-mtl-1-mi300x-1',
      'CA-MTL-1',
      'SECURE',
      'AMD Instinct MI300X OAM',
      8,
      null,
      DATACENTER,
    ),
    gpuHost(
      'ca-mtl-1-rtx4090-c1',
      'CA-MTL-1',
      'COMMUNITY',
      'NVIDIA GeForce RTX 4090',
      4,
      '12.6',
      COMMUNITY_RIG,
    ),
    gpuHost(
      'ca-mtl-1-a5000-c1',
      'CA-MTL-1',
      'COMMUNITY',
      'NVIDIA RTX A5000',
      2,
      '12.1',
      COMMUNITY_RIG,
    ),
    cpuHost('ca-mtl-1-cpu-1', 'CA-MTL-1', ['cpu3c', 'cpu3g'], 32, 128),

    gpuHost('eur-is-1-h200-1', 'EUR-IS-1', 'SECURE', 'NVIDIA H200', 8, '12.9', DATACENTER),
  ],
  localHost: { dataCenterId: 'US-KS-2' },
}

/** `--fleet none`: only the machine podyard runs on, in a data center of its own. */
export const NONE_FLEET_FILE: FleetFile = {
  dataCenters: [
    {
      id: 'LOCAL-1',
      name: 'Local machine',
      region: 'UNKNOWN',
      globalNetwork: false,
      networkVolumeTypes: ['STANDARD'],
      compliance: [],
    },
  ],
  hosts: [],
  localHost: { dataCenterId: 'LOCAL-1' },
}

// Parsed like any fleet file, so the built-ins cannot drift from what parseFleet accepts.
export const demoFleet: Fleet = parseFleet(DEMO_FLEET_FILE, 'built-in "demo"')
export const noneFleet: Fleet = parseFleet(NONE_FLEET_FILE, 'built-in "none"')

export const BUILT_IN_FLEETS: Readonly<Record<'demo' | 'none', Fleet>> = {
  demo: demoFleet,
  none: noneFleet,
}
