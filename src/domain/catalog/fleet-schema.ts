import { Type, type Static, type TLiteral, type TUnion } from '@sinclair/typebox'
import {
  CLOUDS,
  COMPLIANCE_VALUES,
  DEFAULT_CUDA_VERSION,
  HOST_DRIVERS,
  NETWORK_VOLUME_TYPES,
  REGIONS,
} from './fleet.js'
import { CUDA_VERSIONS } from './gpu-types.js'

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
          dataDisk: Type.Optional(
            Type.String({
              pattern: '^/dev/[A-Za-z0-9._:/-]+$',
              maxLength: 255,
              description:
                "the block device under the engine's data root on its machine, e.g. /dev/nvme0n1: containment.diskWrite's limits are set on it (without it, another machine's engine reports diskWrite unenforced)",
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    publicIp: Type.Optional(Type.String({ minLength: 1 })),
    labels: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description:
          'the admin\'s labels, e.g. {"pool": "team-a", "ib": "true", "driver": "550"}; pool reserves the host to the accounts bound to it',
      }),
    ),
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
