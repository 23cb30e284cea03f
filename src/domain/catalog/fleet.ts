import { findGpuType } from './gpu-types.js'
import type { CpuPrice, GpuPrice } from './price-table.js'

export const CLOUDS = ['SECURE', 'COMMUNITY'] as const
export type Cloud = (typeof CLOUDS)[number]

/** Wire-compat §3.3 DataCenter.region. */
export const REGIONS = [
  'NORTH_AMERICA',
  'SOUTH_AMERICA',
  'EUROPE',
  'ASIA',
  'MIDDLE_EAST',
  'AFRICA',
  'OCEANIA',
  'ANTARCTICA',
  'UNKNOWN',
] as const
export type Region = (typeof REGIONS)[number]

export const NETWORK_VOLUME_TYPES = ['STANDARD', 'HIGH_PERFORMANCE'] as const
export type NetworkVolumeType = (typeof NETWORK_VOLUME_TYPES)[number]

/** Wire-compat §3.3 DataCenter.compliance. */
export const COMPLIANCE_VALUES = [
  'GDPR',
  'ISO_IEC_27001',
  'ISO_14001',
  'PCI_DSS',
  'HITRUST',
  'SOC_1_TYPE_2',
  'SOC_2_TYPE_2',
  'SOC_3_TYPE_2',
  'ITAR',
  'FISMA_HIGH',
  'HIPAA',
  'RENEWABLE',
] as const

export const HOST_DRIVERS = ['process', 'docker'] as const
export type HostDriver = (typeof HOST_DRIVERS)[number]

export interface DataCenter {
  id: string
  name: string
  region: Region
  /** ISO 3166-1 alpha-2, e.g. RO for EU-RO-1; absent when neither declared nor in the id. */
  countryCode?: string
  globalNetwork: boolean
  networkVolumeTypes: NetworkVolumeType[]
  compliance: string[]
  /**
   * Where the data center's shared network volume storage (NFS or similar) is mounted, the
   * same path on each of its hosts and on this server; absent: `<dataDir>/volumes`.
   */
  networkVolumeRoot?: string
}

export interface HostGpu {
  typeId: string
  count: number
  /** Highest CUDA version the host's driver supports; null for AMD GPUs. */
  cudaVersion: string | null
}

export const DOCKER_URL_SCHEMES = ['ssh', 'tcp', 'unix'] as const

/**
 * Where a host's Docker engine answers (docs/fleet.md, "Remote hosts"): `ssh://user@name[:port]`
 * with a private key and a known_hosts file (the host key is always checked),
 * `tcp://name:port` with mutual TLS, or `unix:///path`. File paths are read at start.
 */
export interface HostDockerEndpoint {
  url: string
  /** ssh: the private key podyard logs in with. */
  sshKey?: string
  /** ssh: known_hosts holding the host's key (plain or hashed names). */
  knownHosts?: string
  /** tcp: the CA that signed the engine's certificate, and podyard's client certificate. */
  tls?: { ca: string; cert: string; key: string }
  /**
   * The block device under the engine's data root on its machine (`/dev/nvme0n1`): its
   * containers' disk writes are limited on it (containment.diskWrite). podyard finds this disk
   * itself for this machine's engine only; without it another machine's engine is left
   * unlimited and reports `diskWrite` unenforced.
   */
  dataDisk?: string
}

export interface Host {
  id: string
  dataCenterId: string
  cloud: Cloud
  gpu: HostGpu | null
  vcpus: number
  memoryGb: number
  diskGb: number
  driver: HostDriver
  /** CPU flavors whose pods may be placed here; GPU hosts usually offer none. */
  cpuFlavors: string[]
  /**
   * Declared hardware that does not exist: virtual GPU indices in CUDA_VISIBLE_DEVICES, no GPU
   * devices requested. Its pods run on this machine (process driver, or the local engine with
   * `driver: docker`), or on the engine of `docker.url` when it names one.
   */
  simulated: boolean
  /** The host's own Docker engine; absent: this machine's (docker.socketPath). */
  docker?: HostDockerEndpoint
  /** Where the host's published ports are reached (RUNPOD_PUBLIC_IP); default in hostPublicIp. */
  publicIp?: string
  /**
   * Set on a host as it offers itself (domain/hosts/offered-host.ts) when declared GPUs are not
   * offered: of which type, and why, so that a refused placement can say it.
   */
  withheldGpu?: { typeId: string; reason: string }
  /**
   * The admin's labels (`pool=team-a`, `ib=true`, `driver=550`), keys sorted; absent: none.
   * `pool` reserves the host to the accounts bound to that pool (placement-constraints.ts).
   */
  labels?: Record<string, string>
}

export interface FleetPrices {
  /** Every catalog GPU type, keyed by id. */
  gpus: Record<string, GpuPrice>
  /** Every CPU flavor, keyed by id. */
  cpus: Record<string, CpuPrice>
}

export interface LocalHostSetting {
  dataCenterId: string
  cloud: Cloud
  cpuFlavors: string[]
}

export interface Fleet {
  dataCenters: DataCenter[]
  hosts: Host[]
  prices: FleetPrices
  /** Where the discovered local host joins, or false when it stays out of the fleet. */
  localHost: LocalHostSetting | false
}

/** First segments of RunPod's data center ids that name a region, not a country (EU-RO-1). */
const REGION_PREFIXES: ReadonlySet<string> = new Set(['EU', 'EUR', 'OC', 'AP', 'SA', 'ME', 'AF'])

/**
 * The country of a data center from its id, as RunPod names them: `US-KS-2` is US, `EU-RO-1`
 * RO, `EUR-IS-1` IS, `OC-AU-1` AU. Undefined when no part of the id is a country (`LOCAL-1`).
 */
export function countryCodeOf(dataCenterId: string): string | undefined {
  return dataCenterId
    .split('-')
    .find((part) => /^[A-Z]{2}$/.test(part) && !REGION_PREFIXES.has(part))
}

/** A label's key: lower case, digits and `._/-`, starting and ending with a letter or digit. */
export const LABEL_KEY_PATTERN = /^[a-z0-9](?:[a-z0-9._/-]{0,61}[a-z0-9])?$/
/** A label's value: letters, digits and `._-`, starting with a letter or digit. */
export const LABEL_VALUE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/
/** The label whose value names the pool a host is reserved to. */
export const POOL_LABEL = 'pool'

/** Reserved so a declared host can never be mistaken for the machine podyard runs on. */
export const LOCAL_HOST_ID = 'local'
export const DEFAULT_LOCAL_CPU_FLAVORS: readonly string[] = ['cpu3c', 'cpu3g']
export const DEFAULT_HOST_DISK_GB = 500
/** What a declared NVIDIA host without a cudaVersion gets: a driver current in early 2026. */
export const DEFAULT_CUDA_VERSION = '12.8'

/** What the runtime found on the machine podyard runs on. */
export interface DiscoveredHost {
  vcpus: number
  memoryGb: number
  diskGb: number
  gpus: { typeId: string; count: number; cudaVersion: string | null } | null
}

export interface LocalHostOptions {
  driver?: HostDriver
  /** Told about discovered hardware the catalog cannot offer. */
  warn?: (message: string) => void
}

/**
 * Adds the real machine as host `local` where the fleet's `localHost` setting says. A GPU whose
 * type the catalog does not know is left out (the host still serves CPU pods): listing it would
 * need a name, memory and price we do not have.
 */
export function withLocalHost(
  fleet: Fleet,
  discovered: DiscoveredHost,
  options: LocalHostOptions = {},
): Fleet {
  if (fleet.localHost === false) return fleet
  let gpu: HostGpu | null = null
  if (discovered.gpus && discovered.gpus.count > 0) {
    const type = findGpuType(discovered.gpus.typeId)
    if (type) {
      gpu = {
        typeId: type.id,
        count: discovered.gpus.count,
        cudaVersion: type.manufacturer === 'NVIDIA' ? discovered.gpus.cudaVersion : null,
      }
    } else {
      options.warn?.(
        `local GPU "${discovered.gpus.typeId}" is not a known GPU type; the local host offers no GPUs`,
      )
    }
  }
  const local: Host = {
    id: LOCAL_HOST_ID,
    dataCenterId: fleet.localHost.dataCenterId,
    cloud: fleet.localHost.cloud,
    gpu,
    vcpus: discovered.vcpus,
    memoryGb: discovered.memoryGb,
    diskGb: discovered.diskGb,
    driver: options.driver ?? 'process',
    cpuFlavors: [...fleet.localHost.cpuFlavors],
    simulated: false,
  }
  return { ...fleet, hosts: [...fleet.hosts.filter((h) => h.id !== LOCAL_HOST_ID), local] }
}

/**
 * Where a host runs its workloads: `engine` (its own Docker engine, `docker.url`), `here`
 * (this machine: the local host and simulated hosts), or `none`: a real host that declares no
 * engine, which runs nothing (its pods are never started on this machine instead).
 */
export function hostRuntimeKind(host: Host): 'engine' | 'here' | 'none' {
  if (host.docker) return 'engine'
  if (host.id === LOCAL_HOST_ID || host.simulated) return 'here'
  return 'none'
}

/**
 * The address of a host's published ports: its `publicIp`, else the host name of its engine's
 * ssh:// or tcp:// URL, else this server's (`localIp`: the local and simulated hosts).
 */
export function hostPublicIp(host: Host, localIp: string): string {
  if (host.publicIp) return host.publicIp
  if (host.docker) {
    const url = new URL(host.docker.url)
    if (url.protocol !== 'unix:' && url.hostname !== '') return url.hostname.replace(/^\[|\]$/g, '')
  }
  return localIp
}

export function findDataCenter(fleet: Fleet, id: string): DataCenter | undefined {
  return fleet.dataCenters.find((dc) => dc.id === id)
}

/** Whether the data center keeps its network volumes on shared storage (`networkVolumeRoot`). */
export function hasSharedVolumeStorage(fleet: Fleet, id: string): boolean {
  return Boolean(findDataCenter(fleet, id)?.networkVolumeRoot)
}
