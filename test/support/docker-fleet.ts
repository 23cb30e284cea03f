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
  } = {},
): string {
  const { hostId = 'sim-l4-1', gpus = 2, vcpus = 2, memoryGb = 4 } = options
  return `
dataCenters:
  - id: EU-SE-1
    name: EU Sweden 1
    region: EUROPE${options.globalNetwork ? '\n    globalNetwork: true' : ''}
hosts:
  - id: ${hostId}
    dataCenterId: EU-SE-1
    gpu: { typeId: NVIDIA L4, count: ${gpus} }
    vcpus: ${vcpus}
    memoryGb: ${memoryGb}
    driver: docker
localHost:${options.localHost ? '\n  dataCenterId: EU-SE-1' : ' false'}
`
}
