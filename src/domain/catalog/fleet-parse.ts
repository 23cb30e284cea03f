import type { TSchema } from '@sinclair/typebox'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import { isKnownCpuFlavor } from './cpu-flavors.js'
import {
  countryCodeOf,
  DEFAULT_CUDA_VERSION,
  DEFAULT_HOST_DISK_GB,
  DEFAULT_LOCAL_CPU_FLAVORS,
  DOCKER_URL_SCHEMES,
  LABEL_KEY_PATTERN,
  LABEL_VALUE_PATTERN,
  LOCAL_HOST_ID,
  type DataCenter,
  type Fleet,
  type FleetPrices,
  type Host,
  type HostDockerEndpoint,
  type HostGpu,
  type LocalHostSetting,
} from './fleet.js'
import { FleetFileSchema, type FleetFile } from './fleet-schema.js'
import {
  compareCudaVersions,
  CUDA_VERSIONS,
  findGpuType,
  gpuTypeSuggestion,
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
    case ValueErrorType.StringPattern: {
      // The pattern as written (never lowercased: [A-Z] is not [a-z]) and what it is for.
      const { pattern, description } = error.schema as { pattern?: string; description?: string }
      return at(
        `must match ${pattern}${description ? ` (${description})` : ''}, got ${describeValue(error.value)}`,
      )
    }
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
      return at(error.message.charAt(0).toLowerCase() + error.message.slice(1))
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
        problems.add(
          `${path}.gpu.typeId`,
          `unknown GPU type "${host.gpu.typeId}"${gpuTypeSuggestion(host.gpu.typeId)}`,
        )
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
    for (const [key, value] of Object.entries(host.labels ?? {})) {
      const at = `${path}.labels[${JSON.stringify(key)}]`
      if (!LABEL_KEY_PATTERN.test(key))
        problems.add(at, 'is not a label key (a-z, 0-9 and ._/-, at most 63, e.g. ib or pool)')
      else if (!LABEL_VALUE_PATTERN.test(value))
        problems.add(
          at,
          `value ${JSON.stringify(value)} is not a label value (A-Z, a-z, 0-9 and ._-, at most 63)`,
        )
    }
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
            ...(host.docker.dataDisk ? { dataDisk: host.docker.dataDisk } : {}),
          },
        }
      : {}),
    ...(host.publicIp ? { publicIp: host.publicIp } : {}),
    ...(host.labels && Object.keys(host.labels).length > 0
      ? { labels: sortedLabels(host.labels) }
      : {}),
  }
}

/** Keys in order, so that equal labels compare equal as JSON (fleet apply's diff). */
function sortedLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
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
