import { describe, expect, it } from 'vitest'
import {
  countryCodeOf,
  DEFAULT_CUDA_VERSION,
  DEFAULT_HOST_DISK_GB,
  hostPublicIp,
  hostRuntimeKind,
  LOCAL_HOST_ID,
  withLocalHost,
  type DiscoveredHost,
} from './fleet.js'
import { FleetError, parseFleet } from './fleet-parse.js'
import { DEFAULT_GPU_PRICES } from './price-table.js'

const dc = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: `DC ${id}`,
  region: 'EUROPE',
  ...extra,
})
const gpuHost = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  dataCenterId: 'EU-RO-1',
  gpu: { typeId: 'NVIDIA GeForce RTX 4090', count: 2, cudaVersion: '12.8' },
  vcpus: 32,
  memoryGb: 124,
  ...extra,
})
const doc = (extra: Record<string, unknown> = {}) => ({
  dataCenters: [dc('EU-RO-1'), dc('US-KS-2')],
  hosts: [gpuHost('h1')],
  ...extra,
})

function errorsOf(document: unknown): string[] {
  try {
    parseFleet(document, 'fleet.yaml')
  } catch (error) {
    expect(error).toBeInstanceOf(FleetError)
    expect((error as FleetError).message).toContain('invalid fleet fleet.yaml:\n  fleet ')
    return (error as FleetError).errors
  }
  throw new Error('expected a FleetError')
}

describe('parseFleet', () => {
  it('applies the defaults of data centers, hosts and the local host', () => {
    const fleet = parseFleet(
      {
        dataCenters: [dc('EU-RO-1')],
        hosts: [{ id: 'cpu', dataCenterId: 'EU-RO-1', vcpus: 8, memoryGb: 32 }],
      },
      'test',
    )
    expect(fleet.dataCenters).toEqual([
      {
        id: 'EU-RO-1',
        name: 'DC EU-RO-1',
        region: 'EUROPE',
        // The country part of RunPod's id form, unless declared.
        countryCode: 'RO',
        globalNetwork: false,
        networkVolumeTypes: ['STANDARD'],
        compliance: [],
      },
    ])
    expect(fleet.hosts).toEqual([
      {
        id: 'cpu',
        dataCenterId: 'EU-RO-1',
        cloud: 'SECURE',
        gpu: null,
        vcpus: 8,
        memoryGb: 32,
        diskGb: DEFAULT_HOST_DISK_GB,
        driver: 'process',
        cpuFlavors: [],
        simulated: true,
      },
    ])
    expect(fleet.localHost).toEqual({
      dataCenterId: 'EU-RO-1',
      cloud: 'SECURE',
      cpuFlavors: ['cpu3c', 'cpu3g'],
    })
    expect(fleet.prices.gpus['NVIDIA GeForce RTX 4090']).toEqual(
      DEFAULT_GPU_PRICES['NVIDIA GeForce RTX 4090'],
    )
  })

  it("reads a data center's country from its id, unless declared", () => {
    expect(countryCodeOf('US-KS-2')).toBe('US')
    expect(countryCodeOf('EU-RO-1')).toBe('RO')
    expect(countryCodeOf('EUR-IS-1')).toBe('IS')
    expect(countryCodeOf('OC-AU-1')).toBe('AU')
    expect(countryCodeOf('AP-JP-1')).toBe('JP')
    expect(countryCodeOf('LOCAL-1')).toBeUndefined()
  })

  it('gives NVIDIA GPUs a default CUDA version and AMD GPUs none', () => {
    const fleet = parseFleet(
      doc({
        hosts: [
          gpuHost('n', { gpu: { typeId: 'NVIDIA A40', count: 1 } }),
          gpuHost('a', { gpu: { typeId: 'AMD Instinct MI300X OAM', count: 8 } }),
        ],
      }),
      'test',
    )
    expect(fleet.hosts.map((h) => h.gpu?.cudaVersion)).toEqual([DEFAULT_CUDA_VERSION, null])
  })

  it('overrides prices per type and keeps the rest of the table', () => {
    const fleet = parseFleet(
      doc({
        prices: {
          gpus: { 'NVIDIA GeForce RTX 4090': { secure: 0.5 } },
          cpus: { cpu3c: { serverlessPerVcpu: 0.01 } },
        },
      }),
      'test',
    )
    expect(fleet.prices.gpus['NVIDIA GeForce RTX 4090']).toEqual({
      secure: 0.5,
      community: 0.34,
      serverless: 1.1,
    })
    expect(fleet.prices.gpus['NVIDIA A40']).toEqual(DEFAULT_GPU_PRICES['NVIDIA A40'])
    expect(fleet.prices.cpus.cpu3c).toEqual({ securePerVcpu: 0.04, serverlessPerVcpu: 0.01 })
  })

  it('places the local host where localHost says, or leaves it out', () => {
    expect(
      parseFleet(
        doc({ localHost: { dataCenterId: 'US-KS-2', cloud: 'COMMUNITY', cpuFlavors: ['cpu5c'] } }),
        't',
      ).localHost,
    ).toEqual({
      dataCenterId: 'US-KS-2',
      cloud: 'COMMUNITY',
      cpuFlavors: ['cpu5c'],
    })
    expect(parseFleet(doc({ localHost: false }), 't').localHost).toBe(false)
  })

  it('names the path of an unknown GPU type', () => {
    const hosts = [
      gpuHost('h1'),
      gpuHost('h2'),
      gpuHost('h3', { gpu: { typeId: 'RTX 9999', count: 1 } }),
    ]
    expect(errorsOf(doc({ hosts }))).toEqual([
      'fleet hosts[2].gpu.typeId: unknown GPU type "RTX 9999"',
    ])
  })

  it('rejects duplicate host ids and the reserved local id', () => {
    expect(errorsOf(doc({ hosts: [gpuHost('h1'), gpuHost('h1')] }))).toEqual([
      'fleet hosts[1].id: duplicate host id "h1"',
    ])
    expect(errorsOf(doc({ hosts: [gpuHost(LOCAL_HOST_ID)] }))).toEqual([
      'fleet hosts[0].id: "local" is reserved for the discovered local host',
    ])
  })

  it("reads a host's own engine and address, and takes such a host for real", () => {
    const ssh = { url: 'ssh://podyard@gpu-node-2', sshKey: '/k', knownHosts: '/kh' }
    const tls = { url: 'tcp://gpu-node-3:2376', tls: { ca: '/ca', cert: '/c', key: '/k' } }
    const fleet = parseFleet(
      doc({
        dataCenters: [dc('EU-RO-1', { networkVolumeRoot: '/mnt/eu-ro-1' })],
        hosts: [
          gpuHost('n2', { docker: ssh }),
          gpuHost('n3', { docker: tls, publicIp: '203.0.113.3' }),
          gpuHost('n4', { docker: { url: 'unix:///run/other.sock' }, simulated: true }),
          gpuHost('n5', { docker: { ...ssh, dataDisk: '/dev/nvme0n1' } }),
        ],
      }),
      'fleet.yaml',
    )
    expect(fleet.dataCenters[0]!.networkVolumeRoot).toBe('/mnt/eu-ro-1')
    const [n2, n3, n4] = fleet.hosts
    expect(n2).toMatchObject({ driver: 'docker', simulated: false, docker: ssh })
    expect(n2).not.toHaveProperty('publicIp')
    expect(hostPublicIp(n2!, '127.0.0.1')).toBe('gpu-node-2')
    expect(hostPublicIp(n3!, '127.0.0.1')).toBe('203.0.113.3')
    expect(hostPublicIp(n4!, '127.0.0.1')).toBe('127.0.0.1')
    expect(n4).toMatchObject({ simulated: true })
    expect(fleet.hosts[3]!.docker).toEqual({ ...ssh, dataDisk: '/dev/nvme0n1' })
    expect(fleet.hosts.map(hostRuntimeKind)).toEqual(['engine', 'engine', 'engine', 'engine'])
  })

  it('tells which hosts run here and which run nothing', () => {
    const fleet = parseFleet(
      doc({ hosts: [gpuHost('sim'), gpuHost('real', { simulated: false, driver: 'docker' })] }),
      'fleet.yaml',
    )
    expect(fleet.hosts.map(hostRuntimeKind)).toEqual(['here', 'none'])
  })

  it('refuses engines it cannot reach safely', () => {
    const host = (docker: unknown, extra: Record<string, unknown> = {}) =>
      doc({ hosts: [gpuHost('n', { docker, ...extra })] })
    expect(errorsOf(host({ url: 'ssh://gpu-node-2' }))).toEqual([
      'fleet hosts[0].docker.url: names no user (ssh://user@host)',
      'fleet hosts[0].docker.sshKey: is required for ssh:// (the private key file)',
      "fleet hosts[0].docker.knownHosts: is required for ssh:// (a known_hosts file with the host's key)",
    ])
    expect(errorsOf(host({ url: 'tcp://gpu-node-3:2375' }))).toEqual([
      'fleet hosts[0].docker.tls: is required for tcp:// (ca, cert and key files)',
    ])
    expect(errorsOf(host({ url: 'http://gpu-node-3:2375' }))).toEqual([
      'fleet hosts[0].docker.url: must start with ssh://, tcp:// or unix://, got "http://gpu-node-3:2375"',
    ])
    expect(errorsOf(host({ url: 'unix:///s', sshKey: '/k' }))).toEqual([
      'fleet hosts[0].docker.sshKey: is only for ssh:// URLs',
    ])
    expect(errorsOf(host({ url: 'unix:///s' }, { driver: 'process' }))).toEqual([
      'fleet hosts[0].driver: must be docker (or omitted) for a host with docker.url',
    ])
    expect(
      errorsOf(doc({ dataCenters: [dc('EU-RO-1', { networkVolumeRoot: 'relative' })] })),
    ).toEqual(['fleet dataCenters[0].networkVolumeRoot: must be an absolute path'])
  })

  it('quotes a pattern as written, with what the field is', () => {
    expect(
      errorsOf(
        doc({ hosts: [gpuHost('n', { docker: { url: 'unix:///s', dataDisk: 'nvme0n1' } })] }),
      ).at(0),
    ).toMatch(
      /^fleet hosts\[0\]\.docker\.dataDisk: must match \^\/dev\/\[A-Za-z0-9\._:\/-\]\+\$ \(the block device under the engine's data root .*\), got "nvme0n1"$/,
    )
    expect(errorsOf(doc({ dataCenters: [dc('EU-RO-1', { countryCode: 'ro' })] }))).toEqual([
      'fleet dataCenters[0].countryCode: must match ^[A-Z]{2}$ (ISO 3166-1 alpha-2, e.g. RO; default: the country part of the id), got "ro"',
    ])
  })

  it('rejects duplicate data center ids and references to missing ones', () => {
    expect(errorsOf(doc({ dataCenters: [dc('EU-RO-1'), dc('EU-RO-1')] }))).toEqual([
      'fleet dataCenters[1].id: duplicate data center id "EU-RO-1"',
    ])
    expect(errorsOf(doc({ hosts: [gpuHost('h1', { dataCenterId: 'XX-1' })] }))).toEqual([
      'fleet hosts[0].dataCenterId: unknown data center "XX-1"',
    ])
    expect(errorsOf(doc({ localHost: { dataCenterId: 'XX-1' } }))).toEqual([
      'fleet localHost.dataCenterId: unknown data center "XX-1"',
    ])
  })

  it('requires at least one data center', () => {
    expect(errorsOf({ dataCenters: [] })).toEqual(['fleet dataCenters: must have at least 1 entry'])
    expect(errorsOf({})).toEqual(['fleet dataCenters: is required'])
    expect(errorsOf('hosts: []')).toEqual(['fleet (document): must be an object, got "hosts: []"'])
  })

  it('rejects unknown CPU flavors and repeated ones', () => {
    expect(
      errorsOf(doc({ hosts: [gpuHost('h1', { cpuFlavors: ['cpu3c', 'cpu4x', 'cpu3c'] })] })),
    ).toEqual([
      'fleet hosts[0].cpuFlavors[1]: unknown CPU flavor "cpu4x"',
      'fleet hosts[0].cpuFlavors[2]: duplicate CPU flavor "cpu3c"',
    ])
    expect(errorsOf(doc({ localHost: { cpuFlavors: ['gpu'] } }))).toEqual([
      'fleet localHost.cpuFlavors[0]: unknown CPU flavor "gpu"',
    ])
  })

  it('accepts only the CUDA versions of the reference, and none on AMD', () => {
    const withCuda = (cudaVersion: unknown) =>
      doc({ hosts: [gpuHost('h1', { gpu: { typeId: 'NVIDIA A40', count: 1, cudaVersion } })] })
    const [error] = errorsOf(withCuda('12.10'))
    expect(error).toBe(
      'fleet hosts[0].gpu.cudaVersion: unknown CUDA version "12.10" ' +
        '(known: 13.0, 12.9, 12.8, 12.7, 12.6, 12.5, 12.4, 12.3, 12.2, 12.1, 12.0, 11.8)',
    )
    expect(errorsOf(withCuda(10.2))[0]).toMatch(/unknown CUDA version 10\.2 /)
    expect(errorsOf(withCuda(true))).toEqual([
      'fleet hosts[0].gpu.cudaVersion: must be string or number or null, got true',
    ])
    expect(
      errorsOf(
        doc({
          hosts: [
            gpuHost('h1', {
              gpu: { typeId: 'AMD Instinct MI300X OAM', count: 8, cudaVersion: '12.8' },
            }),
          ],
        }),
      ),
    ).toEqual(['fleet hosts[0].gpu.cudaVersion: AMD GPUs have no CUDA version; omit it'])
  })

  it('takes unquoted YAML numbers for CUDA versions as the version they spell', () => {
    const versions = [12.8, 12, 13, '12'].map(
      (cudaVersion) =>
        parseFleet(
          doc({ hosts: [gpuHost('h1', { gpu: { typeId: 'NVIDIA A40', count: 1, cudaVersion } })] }),
          't',
        ).hosts[0]?.gpu?.cudaVersion,
    )
    expect(versions).toEqual(['12.8', '12.0', '13.0', '12.0'])
  })

  it('requires positive integer counts and sizes', () => {
    const bad = gpuHost('h1', {
      gpu: { typeId: 'NVIDIA A40', count: 0 },
      vcpus: -1,
      memoryGb: 1.5,
      diskGb: 0,
    })
    expect(errorsOf(doc({ hosts: [bad] }))).toEqual([
      'fleet hosts[0].gpu.count: must be positive, got 0',
      'fleet hosts[0].vcpus: must be positive, got -1',
      'fleet hosts[0].memoryGb: must be an integer, got 1.5',
      'fleet hosts[0].diskGb: must be positive, got 0',
    ])
  })

  it('names enum values, unknown fields and wrong types', () => {
    expect(
      errorsOf(
        doc({
          dataCenters: [dc('EU-RO-1', { region: 'MARS', globalNetwork: 'yes', zone: 1 })],
          hosts: [],
        }),
      ),
    ).toEqual([
      'fleet dataCenters[0].zone: is not a known field',
      expect.stringMatching(
        /^fleet dataCenters\[0\]\.region: must be one of "NORTH_AMERICA", .*, got "MARS"$/,
      ),
      'fleet dataCenters[0].globalNetwork: must be true or false, got "yes"',
    ])
    expect(errorsOf(doc({ hosts: [gpuHost('h1', { cloud: 'PRIVATE', driver: 'kvm' })] }))).toEqual([
      'fleet hosts[0].cloud: must be one of "SECURE", "COMMUNITY", got "PRIVATE"',
      'fleet hosts[0].driver: must be one of "process", "docker", got "kvm"',
    ])
    expect(errorsOf(doc({ localHost: true }))).toEqual([
      'fleet localHost: must be false or an object, got true',
    ])
    expect(errorsOf(doc({ hosts: [gpuHost('h1', { gpu: { typeId: 'NVIDIA A40' } })] }))).toEqual([
      'fleet hosts[0].gpu.count: is required',
    ])
  })

  it('checks price overrides', () => {
    expect(
      errorsOf(
        doc({
          prices: { gpus: { 'RTX 9999': { secure: 1 } }, cpus: { cpu9: { securePerVcpu: 1 } } },
        }),
      ),
    ).toEqual([
      'fleet prices.gpus["RTX 9999"]: unknown GPU type "RTX 9999"',
      'fleet prices.cpus.cpu9: unknown CPU flavor "cpu9"',
    ])
    expect(errorsOf(doc({ prices: { gpus: { 'NVIDIA A40': { secure: -1 } } } }))).toEqual([
      'fleet prices.gpus["NVIDIA A40"].secure: must be at least 0, got -1',
    ])
  })

  it('reports every problem at once', () => {
    const hosts = [
      gpuHost('h1', { dataCenterId: 'X' }),
      gpuHost('h1', { gpu: { typeId: 'RTX 9999', count: 1 } }),
    ]
    expect(errorsOf(doc({ hosts }))).toHaveLength(3)
  })
})

describe('withLocalHost', () => {
  const discovered: DiscoveredHost = {
    vcpus: 16,
    memoryGb: 62,
    diskGb: 200,
    gpus: { typeId: 'NVIDIA GeForce RTX 4090', count: 1, cudaVersion: '12.4' },
  }

  it('adds the real machine as host "local" in the configured data center', () => {
    const fleet = withLocalHost(
      parseFleet(doc({ localHost: { dataCenterId: 'US-KS-2' } }), 't'),
      discovered,
      { driver: 'docker' },
    )
    expect(fleet.hosts.map((h) => h.id)).toEqual(['h1', 'local'])
    expect(fleet.hosts[1]).toEqual({
      id: 'local',
      dataCenterId: 'US-KS-2',
      cloud: 'SECURE',
      gpu: { typeId: 'NVIDIA GeForce RTX 4090', count: 1, cudaVersion: '12.4' },
      vcpus: 16,
      memoryGb: 62,
      diskGb: 200,
      driver: 'docker',
      cpuFlavors: ['cpu3c', 'cpu3g'],
      simulated: false,
    })
  })

  it('defaults to the first data center and the process driver', () => {
    const fleet = withLocalHost(parseFleet(doc(), 't'), { ...discovered, gpus: null })
    expect(fleet.hosts[1]).toMatchObject({ dataCenterId: 'EU-RO-1', driver: 'process', gpu: null })
  })

  it('leaves the machine out when localHost is false', () => {
    const declared = parseFleet(doc({ localHost: false }), 't')
    expect(withLocalHost(declared, discovered)).toBe(declared)
  })

  it('drops a GPU the catalog does not know, with a warning', () => {
    const warnings: string[] = []
    const fleet = withLocalHost(
      parseFleet(doc(), 't'),
      { ...discovered, gpus: { typeId: 'NVIDIA GeForce GTX 1080', count: 1, cudaVersion: '12.2' } },
      { warn: (m) => warnings.push(m) },
    )
    expect(fleet.hosts[1]?.gpu).toBeNull()
    expect(warnings).toEqual([expect.stringContaining('NVIDIA GeForce GTX 1080')])
  })
})
