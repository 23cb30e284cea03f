/**
 * The simulated fleet and the pods of the fleet benches (bench/fleet, bench/replicas), in one
 * place so that their figures are of the same shape.
 */

/** A fleet of `count` simulated hosts: one in five has 8 RTX 4090, the others CPUs. */
export function fleetFile(
  count: number,
  cpuHost: { vcpus: number; memoryGb: number; diskGb: number },
) {
  const dataCenters = ['US-KS-2', 'US-TX-1', 'EU-RO-1', 'EU-SE-1', 'CA-MTL-1'].map((id) => ({
    id,
    name: id,
    region: id.startsWith('EU') ? 'EUROPE' : 'NORTH_AMERICA',
  }))
  const hosts = Array.from({ length: count }, (_, i) => ({
    id: `host-${String(i).padStart(5, '0')}`,
    dataCenterId: dataCenters[i % dataCenters.length]!.id,
    simulated: true,
    ...(i % 5 === 0
      ? { gpu: { typeId: 'NVIDIA GeForce RTX 4090', count: 8 }, vcpus: 64, memoryGb: 512 }
      : { vcpus: cpuHost.vcpus, memoryGb: cpuHost.memoryGb, cpuFlavors: ['cpu3c', 'cpu3g'] }),
    diskGb: cpuHost.diskGb,
  }))
  return { dataCenters, hosts, localHost: false }
}

/** The body of the `i`th measured pod: one in four a GPU pod, the others 2 vCPUs. */
export function measuredPod(i: number) {
  return {
    name: `bench-${i}`,
    image: 'runpod/base:0.6.2',
    disk: 10,
    ...(i % 4 === 3
      ? { gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 } }
      : { cpu: { id: 'cpu3c', vcpuCount: 2 } }),
  }
}
