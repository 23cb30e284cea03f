import { Type, type Static, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import { isKnownCpuFlavor } from './cpu-flavors.js'
import {
  compareCudaVersions,
  CUDA_VERSIONS,
  findGpuType,
  isCudaVersionSyntax,
  type CudaVersion,
} from './gpu-types.js'
import {
  DEFAULT_CPU_PRICES,
  DEFAULT_GPU_PRICES,
  type CpuPrice,
  type GpuPrice,
} from './price-table.js'
import { StartupRefusal } from '../../shared/startup-refusal.js'

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

/** Reserved so a declared host can never be mistaken for the machine podyard runs on. */
export const LOCAL_HOST_ID = 'local'
export const DEFAULT_LOCAL_CPU_FLAVORS: readonly string[] = ['cpu3c', 'cpu3g']
export const DEFAULT_HOST_DISK_GB = 500
/** What a declared NVIDIA host without a cudaVersion gets: a driver current in early 2026. */
export const DEFAULT_CUDA_VERSION = '12.8'

type Literals<T extends readonly string[]> = TUnion<Array<TLiteral<T[number]>>>
const literals = <T extends readonly string[]>(values: T): Literals<T> =>
  Type.Union(values.map((v) => Type.Literal(v))) as Literals<T>
const positiveInteger = (description: string) => Type.Integer({ minimum: 1, description })
const price = Type.Number({ minimum: 0, description: 'USD per hour' })

const DataCenterSchema = Type.Object(
  {
    id: Type.String({ minLength: 1, description: 'e.g. US-KS-2' }),
    name: Type.String({ minLength: 1, description: 'e.g. US Kansas 2' }),
    region: literals(REGIONS),
    countryCode: Type.Optional(
      Type.String({
        pattern: '^[A-Z]{2}$',
        description: 'ISO 3166-1 alpha-2, e.g. RO; default: the country part of the id',
      }),
    ),
    globalNetwork: Type.Optional(Type.Boolean({ default: false })),
    networkVolumeTypes: Type.Optional(
      Type.Array(literals(NETWORK_VOLUME_TYPES), { default: ['STANDARD'] }),
    ),
    compliance: Type.Optional(Type.Array(literals(COMPLIANCE_VALUES), { default: [] })),
    networkVolumeRoot: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'absolute path of the shared volume storage on every host of the data center and on the server',
      }),
    ),
  },
  { additionalProperties: false },
)

const HostGpuSchema = Type.Object(
  {
    typeId: Type.String({ minLength: 1, description: 'GPU type id, e.g. NVIDIA GeForce RTX 4090' }),
    count: positiveInteger('GPUs on the host'),
    cudaVersion: Type.Optional(
      Type.Union([Type.String(), Type.Number(), Type.Null()], {
        description: `one of ${CUDA_VERSIONS.join(', ')}; NVIDIA default ${DEFAULT_CUDA_VERSION}; AMD: omit`,
      }),
    ),
  },
  { additionalProperties: false },
)

/** Said of each credential field: how text given inline is kept. */
const SEALED_NOTE =
  '; text given inline is sealed with the encryption key in the database (hosts added at runtime) and never shown again'

const credentialText = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 65_536,
    description: `tcp: ${what}: a file's path on each replica, or its text (PEM)${SEALED_NOTE}`,
  })

/** A host as the fleet file declares it (also the body of `POST /v2/admin/hosts`). */
export const HostDeclarationSchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    dataCenterId: Type.String({ minLength: 1 }),
    cloud: Type.Optional(literals(CLOUDS)),
    gpu: Type.Optional(Type.Union([HostGpuSchema, Type.Null()])),
    vcpus: positiveInteger('vCPUs'),
    memoryGb: positiveInteger('GB of memory'),
    diskGb: Type.Optional(positiveInteger('GB of disk')),
    driver: Type.Optional(literals(HOST_DRIVERS)),
    cpuFlavors: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    simulated: Type.Optional(Type.Boolean()),
    docker: Type.Optional(
      Type.Object(
        {
          url: Type.String({
            minLength: 1,
            description: 'ssh://user@host[:port], tcp://host:port (with tls) or unix:///path',
          }),
          sshKey: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 65_536,
              description: `ssh: the private key: a file's path, or its text (PEM)${SEALED_NOTE}`,
            }),
          ),
          knownHosts: Type.Optional(
            Type.String({ minLength: 1, description: "ssh: a known_hosts file's path" }),
          ),
          tls: Type.Optional(
            Type.Object(
              {
                ca: credentialText("the CA that signed the engine's certificate"),
                cert: credentialText("podyard's client certificate"),
                key: credentialText("the client certificate's key"),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    publicIp: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
)

const LocalHostSchema = Type.Object(
  {
    dataCenterId: Type.Optional(Type.String({ minLength: 1 })),
    cloud: Type.Optional(literals(CLOUDS)),
    cpuFlavors: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
)

/** The fleet file (YAML or JSON). Defaults are applied by parseFleet. */
export const FleetFileSchema = Type.Object(
  {
    dataCenters: Type.Array(DataCenterSchema, { minItems: 1 }),
    hosts: Type.Optional(Type.Array(HostDeclarationSchema)),
    prices: Type.Optional(
      Type.Object(
        {
          gpus: Type.Optional(
            Type.Record(
              Type.String(),
              Type.Object(
                {
                  secure: Type.Optional(price),
                  community: Type.Optional(price),
                  serverless: Type.Optional(price),
                },
                { additionalProperties: false },
              ),
            ),
          ),
          cpus: Type.Optional(
            Type.Record(
              Type.String(),
              Type.Object(
                {
                  securePerVcpu: Type.Optional(price),
                  serverlessPerVcpu: Type.Optional(price),
                },
                { additionalProperties: false },
              ),
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    localHost: Type.Optional(Type.Union([Type.Literal(false), LocalHostSchema])),
  },
  { additionalProperties: false },
)

export type FleetFile = Static<typeof FleetFileSchema>

/** A fleet definition that cannot be used; `errors` name each offending path. */
export class FleetError extends StartupRefusal {
  constructor(
    readonly source: string,
    readonly errors: string[],
  ) {
    super(`invalid fleet ${source}:\n  ${errors.join('\n  ')}`)
    this.name = 'FleetError'
  }
}

/** `/hosts/2/gpu/typeId` -> `hosts[2].gpu.typeId`; keys that are not identifiers are quoted. */
function displayPath(pointer: string): string {
  let out = ''
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (/^\d+$/.test(key)) out += `[${key}]`
    else if (/^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`
    else out += `[${JSON.stringify(key)}]`
  }
  return out === '' ? '(document)' : out
}

const describeValue = (value: unknown) => (value === undefined ? 'nothing' : JSON.stringify(value))

/** A union of literals is an enum; its TypeBox message ("Expected union value") says too little. */
function enumValues(schema: TSchema): unknown[] | undefined {
  const variants: TSchema[] | undefined = schema.anyOf
  if (!variants) return undefined
  const values: unknown[] = []
  for (const variant of variants) {
    if ('const' in variant) values.push(variant.const)
    else if (variant.type === 'null') values.push(null)
    else {
      const nested = enumValues(variant)
      if (!nested) return undefined
      values.push(...nested)
    }
  }
  return values
}

function schemaProblems(error: ValueError): Array<{ path: string; problem: string }> {
  const at = (problem: string) => [{ path: error.path, problem }]
  const schema = error.schema as { minimum?: number; minItems?: number; type?: string }
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return at('is required')
    case ValueErrorType.ObjectAdditionalProperties:
      return at('is not a known field')
    case ValueErrorType.Integer:
      return at(`must be an integer, got ${describeValue(error.value)}`)
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return at(
        schema.minimum === 1
          ? `must be positive, got ${describeValue(error.value)}`
          : `must be at least ${schema.minimum}, got ${describeValue(error.value)}`,
      )
    case ValueErrorType.StringMinLength:
      return at('must not be empty')
    case ValueErrorType.ArrayMinItems:
      return at(
        `must have at least ${schema.minItems} ${schema.minItems === 1 ? 'entry' : 'entries'}`,
      )
    case ValueErrorType.String:
      return at(`must be a string, got ${describeValue(error.value)}`)
    case ValueErrorType.Number:
      return at(`must be a number, got ${describeValue(error.value)}`)
    case ValueErrorType.Boolean:
      return at(`must be true or false, got ${describeValue(error.value)}`)
    case ValueErrorType.Array:
      return at(`must be a list, got ${describeValue(error.value)}`)
    case ValueErrorType.Object:
      return at(`must be an object, got ${describeValue(error.value)}`)
    case ValueErrorType.Union: {
      const values = enumValues(error.schema)
      if (values) {
        const allowed = values.map((v) => JSON.stringify(v)).join(', ')
        return at(`must be one of ${allowed}, got ${describeValue(error.value)}`)
      }
      // `gpu: {...} | null` and `localHost: false | {...}`: an object was meant, so report
      // what is wrong inside it rather than that no variant matched.
      const variants: TSchema[] = error.schema.anyOf
      const objectVariant = variants.findIndex((v) => v.type === 'object')
      const value = error.value
      if (
        objectVariant >= 0 &&
        typeof value === 'object' &&
        value !== null &&
        !Array.isArray(value)
      ) {
        return [...(error.errors[objectVariant] ?? [])].flatMap(schemaProblems)
      }
      const kinds = variants.map((v) =>
        'const' in v ? JSON.stringify(v.const) : v.type === 'object' ? 'an object' : `${v.type}`,
      )
      return at(`must be ${kinds.join(' or ')}, got ${describeValue(value)}`)
    }
    default:
      return at(error.message.toLowerCase())
  }
}

class Problems {
  readonly list: string[] = []
  add(path: string, problem: string): void {
    this.list.push(`fleet ${path}: ${problem}`)
  }
}

function checkSchema(doc: unknown, problems: Problems): doc is FleetFile {
  const seen = new Set<string>()
  for (const error of Value.Errors(FleetFileSchema, doc)) {
    for (const { path, problem } of schemaProblems(error)) {
      const shown = displayPath(path)
      // One complaint per location: a bad value often trips several keywords at once.
      if (seen.has(shown)) continue
      seen.add(shown)
      problems.add(shown, problem)
    }
  }
  return problems.list.length === 0
}

function checkCpuFlavors(flavors: string[], path: string, problems: Problems): void {
  const seen = new Set<string>()
  flavors.forEach((flavor, i) => {
    if (!isKnownCpuFlavor(flavor)) problems.add(`${path}[${i}]`, `unknown CPU flavor "${flavor}"`)
    else if (seen.has(flavor)) problems.add(`${path}[${i}]`, `duplicate CPU flavor "${flavor}"`)
    seen.add(flavor)
  })
}

function checkReferences(file: FleetFile, problems: Problems): void {
  const dataCenterIds = new Set<string>()
  file.dataCenters.forEach((dc, i) => {
    if (dataCenterIds.has(dc.id))
      problems.add(`dataCenters[${i}].id`, `duplicate data center id "${dc.id}"`)
    dataCenterIds.add(dc.id)
  })

  const hostIds = new Set<string>()
  ;(file.hosts ?? []).forEach((host, i) => {
    const path = `hosts[${i}]`
    if (host.id === LOCAL_HOST_ID) {
      problems.add(`${path}.id`, `"${LOCAL_HOST_ID}" is reserved for the discovered local host`)
    } else if (hostIds.has(host.id)) {
      problems.add(`${path}.id`, `duplicate host id "${host.id}"`)
    }
    hostIds.add(host.id)
    if (!dataCenterIds.has(host.dataCenterId)) {
      problems.add(`${path}.dataCenterId`, `unknown data center "${host.dataCenterId}"`)
    }
    if (host.gpu) {
      const type = findGpuType(host.gpu.typeId)
      if (!type) {
        problems.add(`${path}.gpu.typeId`, `unknown GPU type "${host.gpu.typeId}"`)
      } else if (type.manufacturer !== 'NVIDIA' && host.gpu.cudaVersion != null) {
        problems.add(
          `${path}.gpu.cudaVersion`,
          `${type.manufacturer} GPUs have no CUDA version; omit it`,
        )
      }
      const cuda = host.gpu.cudaVersion
      if (type?.manufacturer === 'NVIDIA' && cuda != null && !knownCudaVersion(cuda)) {
        problems.add(
          `${path}.gpu.cudaVersion`,
          `unknown CUDA version ${JSON.stringify(cuda)} (known: ${CUDA_VERSIONS.join(', ')})`,
        )
      }
    }
    checkCpuFlavors(host.cpuFlavors ?? [], `${path}.cpuFlavors`, problems)
    if (host.docker) {
      if (host.driver === 'process')
        problems.add(`${path}.driver`, 'must be docker (or omitted) for a host with docker.url')
      for (const problem of dockerEndpointProblems(host.docker))
        problems.add(`${path}.docker${problem.field ? `.${problem.field}` : ''}`, problem.text)
    }
  })
  file.dataCenters.forEach((dc, i) => {
    if (dc.networkVolumeRoot !== undefined && !dc.networkVolumeRoot.startsWith('/'))
      problems.add(`dataCenters[${i}].networkVolumeRoot`, 'must be an absolute path')
  })

  for (const id of Object.keys(file.prices?.gpus ?? {})) {
    if (!findGpuType(id))
      problems.add(`prices.gpus[${JSON.stringify(id)}]`, `unknown GPU type "${id}"`)
  }
  for (const id of Object.keys(file.prices?.cpus ?? {})) {
    if (!isKnownCpuFlavor(id)) problems.add(`prices.cpus.${id}`, `unknown CPU flavor "${id}"`)
  }

  if (file.localHost) {
    const dataCenterId = file.localHost.dataCenterId
    if (dataCenterId !== undefined && !dataCenterIds.has(dataCenterId)) {
      problems.add('localHost.dataCenterId', `unknown data center "${dataCenterId}"`)
    }
    checkCpuFlavors(file.localHost.cpuFlavors ?? [], 'localHost.cpuFlavors', problems)
  }
}

/**
 * What is wrong with a docker endpoint: a scheme podyard does not speak, SSH without a key or
 * without known_hosts (ssh2 would accept any host key), TCP without TLS (the Docker API is
 * root on the host: never in the clear).
 */
function dockerEndpointProblems(
  endpoint: HostDockerEndpoint,
): Array<{ field?: string; text: string }> {
  let url: URL
  try {
    url = new URL(endpoint.url)
  } catch {
    return [{ field: 'url', text: `is not a URL: ${JSON.stringify(endpoint.url)}` }]
  }
  const scheme = url.protocol.replace(/:$/, '')
  const problems: Array<{ field?: string; text: string }> = []
  const not = (field: string, why: string) => problems.push({ field, text: why })
  if (!(DOCKER_URL_SCHEMES as readonly string[]).includes(scheme)) {
    not('url', `must start with ssh://, tcp:// or unix://, got ${JSON.stringify(endpoint.url)}`)
    return problems
  }
  if (scheme === 'ssh') {
    if (url.hostname === '') not('url', 'names no host')
    if (url.username === '') not('url', 'names no user (ssh://user@host)')
    if (!endpoint.sshKey) not('sshKey', 'is required for ssh:// (the private key file)')
    if (!endpoint.knownHosts)
      not('knownHosts', "is required for ssh:// (a known_hosts file with the host's key)")
  } else if (endpoint.sshKey || endpoint.knownHosts) {
    not(endpoint.sshKey ? 'sshKey' : 'knownHosts', 'is only for ssh:// URLs')
  }
  if (scheme === 'tcp') {
    if (url.hostname === '' || url.port === '') not('url', 'must name a host and a port')
    if (!endpoint.tls) not('tls', 'is required for tcp:// (ca, cert and key files)')
  } else if (endpoint.tls) {
    not('tls', 'is only for tcp:// URLs')
  }
  if (scheme === 'unix' && url.pathname === '') not('url', 'names no socket path')
  return problems
}

function mergePrices(file: FleetFile): FleetPrices {
  const gpus: Record<string, GpuPrice> = {}
  for (const [id, base] of Object.entries(DEFAULT_GPU_PRICES)) {
    gpus[id] = { ...base, ...file.prices?.gpus?.[id] }
  }
  const cpus: Record<string, CpuPrice> = {}
  for (const [id, base] of Object.entries(DEFAULT_CPU_PRICES)) {
    cpus[id] = { ...base, ...file.prices?.cpus?.[id] }
  }
  return { gpus, cpus }
}

/**
 * The listed version a declared one stands for. YAML reads an unquoted `12.8` as a number and
 * `12.0` as 12, so numbers and `12` are accepted for what people mean by them.
 */
function knownCudaVersion(value: string | number): CudaVersion | undefined {
  const text = String(value)
  if (!isCudaVersionSyntax(text)) return undefined
  return CUDA_VERSIONS.find((v) => compareCudaVersions(v, text) === 0)
}

function toHost(host: NonNullable<FleetFile['hosts']>[number]): Host {
  let gpu: HostGpu | null = null
  if (host.gpu) {
    const isNvidia = findGpuType(host.gpu.typeId)?.manufacturer === 'NVIDIA'
    gpu = {
      typeId: host.gpu.typeId,
      count: host.gpu.count,
      cudaVersion: isNvidia
        ? (knownCudaVersion(host.gpu.cudaVersion ?? DEFAULT_CUDA_VERSION) ?? DEFAULT_CUDA_VERSION)
        : null,
    }
  }
  return {
    id: host.id,
    dataCenterId: host.dataCenterId,
    cloud: host.cloud ?? 'SECURE',
    gpu,
    vcpus: host.vcpus,
    memoryGb: host.memoryGb,
    diskGb: host.diskGb ?? DEFAULT_HOST_DISK_GB,
    driver: host.driver ?? 'process',
    cpuFlavors: [...(host.cpuFlavors ?? [])],
    // A host with an engine of its own is a machine that exists, unless it says otherwise.
    simulated: host.simulated ?? host.docker === undefined,
    ...(host.docker
      ? {
          driver: 'docker' as const,
          docker: {
            url: host.docker.url,
            ...(host.docker.sshKey ? { sshKey: host.docker.sshKey } : {}),
            ...(host.docker.knownHosts ? { knownHosts: host.docker.knownHosts } : {}),
            ...(host.docker.tls ? { tls: { ...host.docker.tls } } : {}),
          },
        }
      : {}),
    ...(host.publicIp ? { publicIp: host.publicIp } : {}),
  }
}

/**
 * Validates a fleet document (already parsed from YAML or JSON) and applies its defaults.
 * Every problem is collected, so one run of `serve` shows all of them.
 * @param source where the document came from, for the error message (a path, "built-in demo")
 */
export function parseFleet(doc: unknown, source: string): Fleet {
  const problems = new Problems()
  if (!checkSchema(doc, problems)) throw new FleetError(source, problems.list)
  checkReferences(doc, problems)
  if (problems.list.length > 0) throw new FleetError(source, problems.list)

  const dataCenters: DataCenter[] = doc.dataCenters.map((dc) => {
    const countryCode = dc.countryCode ?? countryCodeOf(dc.id)
    return {
      id: dc.id,
      name: dc.name,
      region: dc.region,
      ...(countryCode ? { countryCode } : {}),
      globalNetwork: dc.globalNetwork ?? false,
      networkVolumeTypes: [...(dc.networkVolumeTypes ?? ['STANDARD'])],
      compliance: [...(dc.compliance ?? [])],
      ...(dc.networkVolumeRoot ? { networkVolumeRoot: dc.networkVolumeRoot } : {}),
    }
  })
  const setting = doc.localHost ?? {}
  const localHost: LocalHostSetting | false =
    setting === false
      ? false
      : {
          // The schema requires at least one data center, so the first always exists.
          dataCenterId: setting.dataCenterId ?? dataCenters[0]!.id,
          cloud: setting.cloud ?? 'SECURE',
          cpuFlavors: [...(setting.cpuFlavors ?? DEFAULT_LOCAL_CPU_FLAVORS)],
        }
  return {
    dataCenters,
    hosts: (doc.hosts ?? []).map(toHost),
    prices: mergePrices(doc),
    localHost,
  }
}

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

/**
 * Validates host declarations (the fleet file's `hosts:` form) against the fleet's data
 * centers and applies their defaults, as parseFleet does for a file's hosts.
 */
export function parseHostDeclarations(
  hosts: unknown,
  dataCenters: readonly DataCenter[],
  source: string,
): Host[] {
  return parseFleet(
    { dataCenters: dataCenters.map((dc) => ({ ...dc })), hosts, localHost: false },
    source,
  ).hosts
}
