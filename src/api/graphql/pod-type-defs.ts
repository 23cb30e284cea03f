/**
 * The GraphQL schema's pods: the Pod object, its runtime, and the inputs of the pod mutations.
 * Part of `typeDefs` (type-defs.ts).
 */
export const podTypeDefs = /* GraphQL */ `
  input PodEditJobInput {
    podId: String!
    "Registry credentials id; empty string: none. A running pod restarts to pull with them."
    containerRegistryAuthId: String
  }

  enum PodDesiredStatus {
    RUNNING
    EXITED
    TERMINATED
  }

  enum CloudTypeEnum {
    ALL
    SECURE
    COMMUNITY
  }

  type Pod {
    id: String!
    name: String!
    "RUNNING while provisioning, starting or running; EXITED when stopped or failed; TERMINATED."
    desiredStatus: PodDesiredStatus!
    imageName: String!
    "KEY=value strings"
    env: [String!]!
    "comma-separated <port>/<protocol>, e.g. 8888/http,22/tcp"
    ports: String!
    dockerArgs: String!
    containerDiskInGb: Int!
    "GB of the persistent (host-local) volume; 0 when the pod has none."
    volumeInGb: Int!
    "Where the persistent or network volume is mounted; null without a volume."
    volumeMountPath: String
    networkVolumeId: String
    gpuCount: Int!
    "The pod's vCPUs: its share of the host for GPU pods, the instance's for CPU pods."
    vcpuCount: Int!
    memoryInGb: Int!
    "USD per hour now; 0 when the pod is stopped or terminated."
    costPerHr: Float!
    "The host the pod is placed on."
    machineId: String
    machine: Machine!
    "What changed last, and when."
    lastStatusChange: String!
    "Seconds since the container started; 0 when it is not running."
    uptimeSeconds: Int!
    "null until the container is up."
    runtime: PodRuntime
    "RESERVED: every pod is on-demand."
    podType: String!
    "The first declared port's number (RunPod's legacy field); null without ports."
    port: Int
    "Always null: the workload id is internal to the host's runtime driver."
    dockerId: String
    cloudType: CloudTypeEnum!
    dataCenterId: String
    templateId: String
    containerRegistryAuthId: String
    locked: Boolean!
    "The pod's address on its cluster's private network; null outside a cluster."
    clusterIp: String
  }

  type Machine {
    "<podId>-<hostId>"
    podHostId: String
    "GPU type display name, or the CPU flavor name for CPU pods."
    gpuDisplayName: String!
    "The data center id."
    location: String
  }

  type PodRuntime {
    uptimeInSeconds: Int
    ports: [PodRuntimePort!]!
    gpus: [PodRuntimeGpu!]!
    container: PodRuntimeContainer
  }

  type PodRuntimePort {
    ip: String
    isIpPublic: Boolean!
    privatePort: Int!
    publicPort: Int
    type: String!
  }

  type PodRuntimeGpu {
    id: String!
    gpuUtilPercent: Int!
    memoryUtilPercent: Int!
  }

  type PodRuntimeContainer {
    cpuPercent: Int!
    memoryPercent: Int!
  }

  "A port number, as an integer or a string (runpodctl sends and reads strings)."
  scalar PortNumber

  type PortConfig {
    "The port number, as a string, as runpodctl reads it."
    port: String!
    name: String
  }

  type EnvironmentVariable {
    key: String!
    value: String!
  }

  input EnvironmentVariableInput {
    key: String!
    value: String
  }

  input PodFilter {
    podId: String!
  }

  input PodFindAndDeployOnDemandInput {
    name: String
    imageName: String
    gpuTypeId: String
    gpuCount: Int
    cloudType: CloudTypeEnum
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    networkVolumeId: String
    dockerArgs: String
    ports: String
    env: [EnvironmentVariableInput]
    templateId: String
    containerRegistryAuthId: String
    dataCenterId: String
    minVcpuCount: Int
    minMemoryInGb: Int
    allowedCudaVersions: [String]
    "Accepted for compatibility; see docs/graphql.md for what each does here."
    startSsh: Boolean
    startJupyter: Boolean
    supportPublicIp: Boolean
    countryCode: String
    minDownload: Int
    minUpload: Int
    "The most USD per hour the pod may cost; a dearer pod is refused."
    deployCost: Float
    minCudaVersion: String
    stopAfter: String
    terminateAfter: String
    compliance: [String]
    globalNetwork: Boolean
    "podyard extension (RunPod's clients never send it): labels the host must have, such as ib=true or driver>=550"
    hostLabels: [String]
  }

  input PodRentInterruptableInput {
    bidPerGpu: Float
    name: String
    imageName: String
    gpuTypeId: String
    gpuCount: Int
    cloudType: CloudTypeEnum
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    networkVolumeId: String
    dockerArgs: String
    ports: String
    env: [EnvironmentVariableInput]
    templateId: String
    containerRegistryAuthId: String
    dataCenterId: String
    minVcpuCount: Int
    minMemoryInGb: Int
    allowedCudaVersions: [String]
    startSsh: Boolean
    startJupyter: Boolean
    supportPublicIp: Boolean
    countryCode: String
    minDownload: Int
    minUpload: Int
    minCudaVersion: String
    "The most USD per hour the pod may cost; a dearer pod is refused."
    deployCost: Float
    "podyard extension (RunPod's clients never send it): labels the host must have, such as ib=true or driver>=550"
    hostLabels: [String]
  }

  input DeployCpuPodInput {
    name: String
    imageName: String
    "<flavor>-<vcpuCount>-<ramGb>, e.g. cpu3c-2-4; absent: cpu3c with 2 vCPUs (docs/graphql.md)"
    instanceId: String
    cloudType: CloudTypeEnum
    containerDiskInGb: Int
    volumeMountPath: String
    networkVolumeId: String
    dockerArgs: String
    ports: String
    env: [EnvironmentVariableInput]
    templateId: String
    containerRegistryAuthId: String
    dataCenterId: String
    startSsh: Boolean
    startJupyter: Boolean
    supportPublicIp: Boolean
    countryCode: String
    minDownload: Int
    minUpload: Int
    "The most USD per hour the pod may cost; a dearer pod is refused."
    deployCost: Float
    "podyard extension (RunPod's clients never send it): labels the host must have, such as ib=true or driver>=550"
    hostLabels: [String]
  }

  input PodResumeInput {
    podId: String!
    "Must equal the pod's GPU count when given: a pod's GPU count is fixed at create."
    gpuCount: Int
    "CUDA versions the host must have when a stopped pod is placed again; they replace the pod's CUDA constraint."
    allowedCudaVersions: [String]
  }

  input PodStopInput {
    podId: String!
  }

  input PodTerminateInput {
    podId: String!
  }

  input PodBidResumeInput {
    podId: String!
    bidPerGpu: Float
    gpuCount: Int
  }

  input PortConfigInput {
    port: PortNumber
    name: String
  }
`
