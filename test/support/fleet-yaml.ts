import { stringify } from 'yaml'

/**
 * Fleet files for tests (docs/fleet.md), built from typed options instead of YAML written out
 * in each test: `fleetYaml({ hosts: [gpuHost('sim-a6000', A6000, 2)] })` is one simulated GPU
 * host in EU-SE-1 and no local host. The text goes to startTestPlatform's `fleetYaml` (or a
 * file of a test's own); the server checks it as it checks an operator's.
 */

export interface TestDataCenter {
  id: string
  name: string
  region: 'NORTH_AMERICA' | 'SOUTH_AMERICA' | 'EUROPE' | 'ASIA_PACIFIC' | 'OCEANIA' | 'AFRICA'
  globalNetwork?: boolean
  networkVolumeTypes?: string[]
  /** Where its network volumes live: shared storage every host of it mounts (docs/fleet.md). */
  networkVolumeRoot?: string
}

export const EU_SE_1: TestDataCenter = { id: 'EU-SE-1', name: 'EU Sweden 1', region: 'EUROPE' }
export const EU_RO_1: TestDataCenter = { id: 'EU-RO-1', name: 'EU Romania 1', region: 'EUROPE' }

export interface TestHost {
  id: string
  /** Default: the fleet's first data center. */
  dataCenterId?: string
  cloud?: 'SECURE' | 'COMMUNITY'
  gpu?: { typeId: string; count: number; cudaVersion?: string | number }
  cpuFlavors?: string[]
  vcpus: number
  memoryGb: number
  driver?: 'process' | 'docker'
  simulated?: boolean
  docker?: { url: string; dataDisk?: string }
}

export interface TestFleet {
  /** Default: EU-SE-1 alone. */
  dataCenters?: TestDataCenter[]
  hosts?: TestHost[]
  /** This machine as a host of a data center; default false (it is no host). */
  localHost?: false | { dataCenterId: string; cpuFlavors?: string[] }
}

/** A fleet file's text (YAML). */
export function fleetYaml(fleet: TestFleet = {}): string {
  const dataCenters = fleet.dataCenters ?? [EU_SE_1]
  const firstDataCenter = dataCenters[0]?.id
  return stringify({
    dataCenters,
    ...(fleet.hosts
      ? { hosts: fleet.hosts.map((host) => ({ dataCenterId: firstDataCenter, ...host })) }
      : {}),
    localHost: fleet.localHost ?? false,
  })
}

/**
 * A host of `count` GPUs of `typeId`, simulated unless `more` says otherwise (docs/fleet.md:
 * its pods see virtual GPU indices), with 8 vCPUs and 16 GB unless `more` says otherwise.
 */
export function gpuHost(
  id: string,
  typeId: string,
  count: number,
  more: Partial<Omit<TestHost, 'id' | 'gpu'>> & { cudaVersion?: string | number } = {},
): TestHost {
  const { cudaVersion, ...rest } = more
  return {
    id,
    gpu: { typeId, count, ...(cudaVersion === undefined ? {} : { cudaVersion }) },
    vcpus: 8,
    memoryGb: 16,
    ...rest,
  }
}

/**
 * CPU hosts in two data centers: `file-cpu-1` (4 vCPUs, 16 GB) and this machine, both cpu3c in
 * EU-RO-1; EU-SE-1 has no host, for hosts a test adds at runtime.
 */
export const CPU_FLEET_WITH_LOCAL_HOST = fleetYaml({
  dataCenters: [EU_RO_1, EU_SE_1],
  hosts: [{ id: 'file-cpu-1', cpuFlavors: ['cpu3c'], vcpus: 4, memoryGb: 16 }],
  localHost: { dataCenterId: EU_RO_1.id, cpuFlavors: ['cpu3c'] },
})
