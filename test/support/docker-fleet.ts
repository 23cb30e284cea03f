import { EU_SE_1, fleetYaml, gpuHost } from './fleet-yaml.js'

/**
 * A fleet file's text with one simulated GPU host (NVIDIA L4s) run by this machine's Docker
 * engine, in data center EU-SE-1: the machine has no GPU, but GPU pods and workers (the kinds
 * with a persistent volume disk) run in containers with virtual GPU indices (docs/fleet.md).
 * `localHost`: the machine itself is a host of that data center too (else it is no host).
 */
export function simulatedDockerFleet(
  options: {
    hostId?: string
    gpus?: number
    vcpus?: number
    memoryGb?: number
    globalNetwork?: boolean
    localHost?: boolean
    /**
     * How many such hosts (`<hostId>`, `<hostId>-2`, ...), all on this machine's engine: more
     * GPU pods than one host's share of this machine's CPUs would hold (each GPU comes with at
     * least one vCPU, and a host offers no more vCPUs than the engine has).
     */
    hosts?: number
  } = {},
): string {
  const { hostId = 'sim-l4-1', gpus = 2, vcpus = 2, memoryGb = 4, hosts = 1 } = options
  const ids = Array.from({ length: hosts }, (_, i) => (i === 0 ? hostId : `${hostId}-${i + 1}`))
  return fleetYaml({
    dataCenters: [{ ...EU_SE_1, ...(options.globalNetwork ? { globalNetwork: true } : {}) }],
    hosts: ids.map((id) => gpuHost(id, 'NVIDIA L4', gpus, { vcpus, memoryGb, driver: 'docker' })),
    localHost: options.localHost ? { dataCenterId: EU_SE_1.id } : false,
  })
}
