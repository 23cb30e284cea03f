/**
 * The GraphQL schema's serverless endpoints, network volumes and instant clusters.
 * Part of `typeDefs` (type-defs.ts).
 */
export const serverlessTypeDefs = /* GraphQL */ `
  type ServerlessDiscount {
    discountFactor: Float
    type: String
    expirationDate: String
  }

  type Endpoint {
    id: String!
    name: String!
    "The owning account's id."
    userId: String!
    "Always QB (queue-based)."
    type: String!
    "The template the container was taken from; null when the endpoint was saved with an inline template."
    templateId: String
    "GPU or CPU."
    computeType: String!
    "Pools, then -<GPU type id> for each excluded type (null for CPU endpoints)."
    gpuIds: String
    gpuCount: Int!
    "CPU endpoints: <flavor>-<vcpus>-<ramGb> per flavor."
    instanceIds: [String!]!
    "Comma-separated CUDA versions a worker's host must have; empty for any."
    allowedCudaVersions: String!
    minCudaVersion: String
    "The first network volume, or null."
    networkVolumeId: String
    networkVolume: EndpointNetworkVolume
    networkVolumeIds: [EndpointNetworkVolume!]!
    "Comma-separated data center ids; empty for any."
    locations: String!
    "Seconds an idle worker is kept."
    idleTimeout: Int!
    "QUEUE_DELAY or REQUEST_COUNT."
    scalerType: String!
    "Seconds (QUEUE_DELAY, rounded up) or requests per worker (REQUEST_COUNT)."
    scalerValue: Int!
    workersMin: Int!
    workersMax: Int!
    "The workers kept running while idle: workersMin."
    workersStandby: Int!
    executionTimeoutMs: Int!
    flashBootType: FlashBootType!
    "Always empty."
    modelReferences: [String!]!
    "Moves on when a change reaches the workers (image, env, compute, volumes)."
    version: Int!
    env: [EnvironmentVariable!]!
    createdAt: String!
    "The endpoint's worker key (RUNPOD_AI_API_KEY of its workers); only its owner reads it."
    aiKey: String
  }

  type EndpointNetworkVolume {
    "Also under this name, for clients that select networkVolume { id }."
    id: String!
    networkVolumeId: String!
    dataCenterId: String!
  }

  enum FlashBootType {
    OFF
    FLASHBOOT
    PRIORITY_FLASHBOOT
  }

  enum EndpointKind {
    QB
    LB
  }

  input EndpointTemplateInput {
    name: String
    imageName: String
    containerDiskInGb: Int
    dockerArgs: String
    env: [EnvironmentVariableInput]
  }

  input EndpointNetworkVolumeInput {
    networkVolumeId: String
  }

  input EndpointInput {
    "With an id: replace that endpoint whole."
    id: String
    name: String
    templateId: String
    "An inline container instead of templateId."
    template: EndpointTemplateInput
    "Not offered here: an error when given."
    hubReleaseId: String
    "Comma list: pool ids (AMPERE_16), GPU type ids, -<GPU type id> to exclude. Default AMPERE_16."
    gpuIds: String
    gpuCount: Int
    "CPU endpoints: <flavor>-<vcpus>-<ramGb> (cpu3c-2-4); instead of gpuIds."
    instanceIds: [String]
    workersMin: Int
    workersMax: Int
    "Accepted; the minimum workers are the standby ones."
    workersStandby: Int
    "Comma list of data center ids or prefixes of them (US, EU-RO); empty for any."
    locations: String
    networkVolumeId: String
    networkVolumeIds: [EndpointNetworkVolumeInput]
    idleTimeout: Int
    "QUEUE_DELAY or REQUEST_COUNT."
    scalerType: String
    scalerValue: Int
    executionTimeoutMs: Int
    minCudaVersion: String
    "CUDA versions; each item may be a comma list."
    allowedCudaVersions: [String]
    flashBootType: FlashBootType
    "Not supported: an error when not empty."
    modelReferences: [String]
    "QB only."
    type: EndpointKind
    "podyard extension (RunPod's clients never send it): labels its workers' hosts must have, such as ib=true or driver>=550; absent keeps them, [] removes them"
    hostLabels: [String]
  }

  input UpdateEndpointTemplateInput {
    endpointId: String!
    templateId: String!
  }

  type NetworkVolume {
    id: String!
    name: String!
    "GB"
    size: Int!
    dataCenterId: String!
    dataCenter: NetworkVolumeDataCenter!
  }

  type NetworkVolumeDataCenter {
    id: String!
    name: String!
  }

  input CreateNetworkVolumeInput {
    name: String!
    "GB"
    size: Int!
    dataCenterId: String!
    "STANDARD (default) or HIGH_PERFORMANCE, where the data center offers it."
    type: String
  }

  input DeleteNetworkVolumeInput {
    id: String!
  }

  enum ClusterTypeEnum {
    TRAINING
    APPLICATION
    SLURM
    RAY
  }

  input CreateClusterInput {
    clusterName: String!
    gpuTypeId: String!
    podCount: Int!
    gpuCountPerPod: Int!
    imageName: String
    type: ClusterTypeEnum
    "Accepted, not used: the pods are priced as pods."
    deployCost: Float
    templateId: String
    networkVolumeId: String
    "Accepted for compatibility; a cluster's pods have no persistent volume (use networkVolumeId)."
    volumeInGb: Int
    "Accepted, not used."
    throughput: Int
    allowedCudaVersions: [String]
    minCudaVersion: String
    "Accepted, not used."
    volumeKey: String
    dataCenterId: String
    startJupyter: Boolean
    startSsh: Boolean
    containerDiskInGb: Int
    dockerArgs: String
    env: [EnvironmentVariableInput]
    volumeMountPath: String
    ports: String
    "podyard extension (RunPod's clients never send it): labels the hosts of its pods must have, such as ib=true or driver>=550."
    hostLabels: [String]
  }

  input DeleteClusterInput {
    id: String!
  }

  "An instant cluster (docs/clusters.md)."
  type Cluster {
    id: String!
    name: String!
    "Its pods by rank."
    pods: [Pod!]!
  }

  type ServerlessGpuPool {
    "e.g. AMPERE_24"
    id: String!
    gpuTypeIds: [String!]!
  }
`
