/**
 * The GraphQL schema (SDL). Names and shapes follow what RunPod's clients send and read
 * (wire-compat §6); docs/graphql.md lists every operation with an example. Resolvers only map
 * between these shapes and the domain services.
 *
 * Mutation results are nullable on purpose: a domain error must answer
 * `{"errors": [...], "data": {"<mutation>": null}}` (HTTP 200), which a non-null result type
 * would turn into `"data": null`.
 */
export const typeDefs = /* GraphQL */ `
  type Query {
    "The caller's account."
    myself: Myself!
    "One pod of the caller's account."
    pod(input: PodFilter): Pod
    "GPU types some host of the fleet has; one type when input.id is given. Needs no API key."
    gpuTypes(input: GpuTypeFilter): [GpuType!]!
    "The fleet's data centers with live GPU stock. Needs no API key."
    dataCenters: [DataCenter!]!
    "The countries (ISO 3166-1 alpha-2) of the fleet's data centers, for community-cloud queries by country. Needs no API key."
    countryCodes: [String]!
    "CPU flavors some host offers, sized as dstack's and gpuhunt's CPU offers read them. Needs no API key."
    cpuFlavors: [CpuFlavor!]!
    "CPU flavors some host offers (deployCpuPod instance ids are <id>-<vcpus>-<ramGb>). Needs no API key."
    cpuTypes: [CpuType!]!
    "Templates: isRunpod true = the built-in ones, false = the account's own and public ones, absent = all."
    podTemplates(input: PodTemplateInput): [PodTemplate!]!
    "One template the caller may read: its own, another account's public one, or a built-in one."
    podTemplate(id: String): PodTemplate
    "Serverless GPU pools with the fleet's GPU types of each; pools the fleet has no type of are left out."
    serverlessGpuPools: [ServerlessGpuPool!]!
    "The public endpoints (this platform's public models) any account may call at /v2/<aiApiId>/runsync. Needs no API key."
    allAiApiPublicConfigs: [AiApiPublicConfig!]!
    "RunPod Hub listings: this platform has no hub, so always empty. Needs no API key."
    listings(input: ListingsInput): [Listing!]!
  }

  "A public endpoint: one of the platform's public models (docs/public-endpoints.md)."
  type AiApiPublicConfig {
    "cfg_<model id>"
    id: String!
    "The model id: the endpoint id of /v2/<aiApiId>/..."
    aiApiId: String!
    modelName: String!
    displayName: String!
    description: String
    "JSON text: {cost, unit, owner, source, tag, priceString}."
    metadata: String
    "Whether the model's endpoint runs (false: it answers 503)."
    isLive: Boolean!
    createdAt: String!
    updatedAt: String!
  }

  "Accepted and not used: there are no listings."
  input ListingsInput {
    searchTerm: String
    category: String
    repoOwner: String
    type: String
    orderBy: String
    limit: Int
    offset: Int
  }

  type Listing {
    id: String!
    repoId: String
    title: String
    description: String
    repoName: String
    repoOwner: String
    createdAt: String
    updatedAt: String
    views: Int
    stars: Int
    deploys: Int
    language: String
    category: String
    tags: [String!]
    type: String
    listedRelease: ListingRelease
  }

  type ListingRelease {
    id: String!
    name: String
    tagName: String
    createdAt: String
    config: String
    build: ListingBuild
  }

  type ListingBuild {
    id: String!
    imageName: String
  }

  type Mutation {
    # Inputs are nullable because runpodctl declares $input without "!"; a missing input is
    # a validation error from the resolver.
    "Create a GPU pod; it answers at once with desiredStatus RUNNING while the pod starts."
    podFindAndDeployOnDemand(input: PodFindAndDeployOnDemandInput): Pod
    "Create a CPU pod from an instance id such as cpu3c-2-4."
    deployCpuPod(input: DeployCpuPodInput): Pod
    "Start a stopped pod again (desiredStatus RUNNING)."
    podResume(input: PodResumeInput): Pod
    "Stop a pod, also one still PROVISIONING (a desired state); its GPUs are released, volume data is kept (desiredStatus EXITED)."
    podStop(input: PodStopInput): Pod
    "Terminate a pod for good. Returns true; an unknown pod is the error 'pod not found to terminate'."
    podTerminate(input: PodTerminateInput): Boolean
    "Start a stopped spot pod, with a new bid when bidPerGpu is given (docs/pods.md, Spot pods)."
    podBidResume(input: PodBidResumeInput): Pod
    "Create a spot pod: a COMMUNITY pod billed at bidPerGpu per GPU, which an on-demand pod may preempt (docs/pods.md, Spot pods)."
    podRentInterruptable(input: PodRentInterruptableInput): Pod
    "Change a pod's registry credentials (containerRegistryAuthId); other fields are not changed here."
    podEditJob(input: PodEditJobInput): Pod
    "Create a network volume in a data center."
    createNetworkVolume(input: CreateNetworkVolumeInput): NetworkVolume
    "Delete the caller's network volume; refused while a pod uses it. Returns true."
    deleteNetworkVolume(input: DeleteNetworkVolumeInput): Boolean
    "Create an instant cluster: podCount pods of gpuCountPerPod GPUs together in one data center (docs/clusters.md)."
    createCluster(input: CreateClusterInput): Cluster
    "Delete the caller's cluster and terminate its pods. Returns true."
    deleteCluster(input: DeleteClusterInput): Boolean
    "Create a template (no id) or change the given fields of the caller's own template (with id)."
    saveTemplate(input: SaveTemplateInput): PodTemplate
    "Delete the caller's own template with this name; refused while a pod uses it. Returns true."
    deleteTemplate(templateName: String): Boolean
    "Store credentials for a private container registry. The password is never returned."
    saveRegistryAuth(input: SaveRegistryAuthInput): RegistryAuth
    "Replace the user name and password of the caller's registry credentials."
    updateRegistryAuth(input: UpdateRegistryAuthInput): RegistryAuth
    "Delete registry credentials; refused while a pod or template uses them. Returns true."
    deleteRegistryAuth(registryAuthId: String): Boolean
    "Store an account secret for env values to refer to as {{ RUNPOD_SECRET_<name> }}. The value is never returned."
    secretCreate(input: SecretCreateInput): Secret
    "Delete the caller's secret with this id. Returns null, as RunPod's does."
    secretDelete(id: String): Boolean
    "Set the caller's SSH public keys (authorized_keys text)."
    updateUserSettings(input: UpdateUserSettingsInput): Myself
    "Create a serverless endpoint (no id), or replace the caller's endpoint with this id whole: fields left out take their defaults."
    saveEndpoint(input: EndpointInput): Endpoint
    "Point an endpoint at another template; its workers move to the new version."
    updateEndpointTemplate(input: UpdateEndpointTemplateInput): Endpoint
    "Delete the caller's endpoint with its jobs. Returns true."
    deleteEndpoint(id: String): Boolean
  }

  type Myself {
    id: String!
    "The id of the account's user (RunPod: its sign-in identity)."
    authId: String!
    email: String!
    "The account's registry credentials, oldest first (only id and name)."
    containerRegistryCreds: [RegistryAuth!]!
    "The account's pods that are not TERMINATED."
    pods: [Pod!]!
    "SSH public keys as authorized_keys text, as updateUserSettings stored it; null until set."
    pubKey: String
    "Sum of costPerHr over the account's pods, USD per hour."
    currentSpendPerHr: Float!
    "The account's credit balance, USD (docs/billing.md)."
    clientBalance: Float!
    "The most the account's running resources may cost, USD per hour."
    spendLimit: Float!
    networkVolumes: [NetworkVolume!]!
    "The account's own templates."
    podTemplates: [PodTemplate!]!
    "The account's serverless endpoints."
    endpoints: [Endpoint!]!
    "Notifications are not sent by podyard: always false."
    notifyPodsStale: Boolean!
    "Notifications are not sent by podyard: always false."
    notifyPodsGeneral: Boolean!
    "Notifications are not sent by podyard: always false."
    notifyLowBalance: Boolean!
    "No serverless discounts exist here: always null."
    serverlessDiscount: ServerlessDiscount
    "podyard: the quotas the admin set and the account's use of them (docs/billing.md)."
    quotas: AccountQuotas
  }

  "podyard: each quota with its limit (null: no quota) and the use."
  type AccountQuotas {
    gpus: QuotaLine!
    pods: QuotaLine!
    workers: QuotaLine!
    volumeGb: QuotaLine!
  }

  type QuotaLine {
    limit: Int
    used: Float!
  }

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

  input PodEditJobInput {
    podId: String!
    "Registry credentials id; empty string: none. A running pod restarts to pull with them."
    containerRegistryAuthId: String
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

  type GpuType {
    id: String!
    displayName: String!
    memoryInGb: Int!
    manufacturer: String!
    secureCloud: Boolean!
    communityCloud: Boolean!
    "USD per GPU per hour; null where the cloud does not offer the type."
    securePrice: Float
    communityPrice: Float
    "Spot pods are community pods: secureSpotPrice is always null; communitySpotPrice is the least bid per GPU-hour (half the community price), null where the community cloud does not offer the type."
    secureSpotPrice: Float
    communitySpotPrice: Float
    "Unknown here: always null."
    cudaCores: Int
    "Savings plans are not offered: always null."
    oneWeekPrice: Float
    oneMonthPrice: Float
    threeMonthPrice: Float
    "Most GPUs of the type on one host, over both clouds."
    maxGpuCount: Int!
    maxGpuCountSecureCloud: Int!
    maxGpuCountCommunityCloud: Int!
    "Always 1: a pod may have any GPU count from 1 up to maxGpuCount."
    minPodGpuCount: Int!
    "Savings plans are not offered: always null."
    sixMonthPrice: Float
    "USD per GPU per hour of a cluster's pods (they are priced as secure-cloud pods); null for types clusters cannot use."
    clusterPrice: Float
    "Data centers where a cluster of the type fits: two or more nodes of maxGpuCount GPUs on secure-cloud hosts, global networking."
    nodeGroupDatacenters: [DataCenter!]!
    lowestPrice(input: GpuLowestPriceInput): LowestPrice
  }

  type LowestPrice {
    gpuName: String!
    gpuTypeId: String!
    "USD per GPU per hour in the cheapest cloud asked for that can place the pod now."
    uninterruptablePrice: Float
    "Least bidPerGpu of a spot pod: half the community price per GPU-hour; null where the community cloud (as asked) has no host of the type."
    minimumBidPrice: Float
    "High, Medium, Low or None (nothing can be placed now); null where no host of the type is (in the clouds, data center or country asked for)."
    stockStatus: String
    "GPU counts one host can place now."
    availableGpuCounts: [Int!]!
    "Least memory (GB) and vCPUs that come with gpuCount GPUs on a host of the type."
    minMemory: Int
    minVcpu: Int
    "Each CUDA version of the type's hosts, newest first: AVAILABLE when a host with it can place gpuCount GPUs now."
    gpuTypeCudaVersions: [GpuTypeCudaVersion!]!
    "The certifications of the data centers of the hosts counted."
    compliance: [String!]!
    "The countryCode asked for; null when none was."
    countryCode: String
  }

  type GpuTypeCudaVersion {
    cudaVersion: String!
    "AVAILABLE or UNAVAILABLE"
    availability: String!
  }

  type DataCenter {
    id: String!
    name: String!
    "The region, e.g. NORTH_AMERICA."
    location: String!
    globalNetwork: Boolean!
    "Always true: every data center of the fleet takes pods."
    listed: Boolean!
    gpuAvailability: [GpuAvailability!]!
  }

  "A CPU flavor as RunPod's cpuFlavors lists it: instance ids are <id>-<vcpus>-<vcpus * ramMultiplier>."
  type CpuFlavor {
    id: String!
    displayName: String!
    groupId: String!
    minVcpu: Int!
    maxVcpu: Int!
    "GB of memory per vCPU."
    ramMultiplier: Int!
    "GB of container disk per vCPU the smallest host offering the flavor has."
    diskLimitPerVcpu: Int!
    specifics(input: CpuFlavorSpecificsInput): CpuFlavorSpecifics!
  }

  input CpuFlavorSpecificsInput {
    dataCenterId: String
  }

  type CpuFlavorSpecifics {
    "High, Medium, Low or None; null where no host of the data center offers the flavor."
    stockStatus: String
    "USD per hour of the smallest instance (minVcpu vCPUs); null where the flavor is not offered."
    securePrice: Float
  }

  type GpuAvailability {
    gpuTypeId: String!
    displayName: String!
    stockStatus: String!
  }

  type CpuType {
    "The CPU flavor id, e.g. cpu3c."
    id: String!
    "e.g. Compute-Optimized (Gen 3)"
    displayName: String!
    "Most vCPUs one host offers for the flavor."
    cores: Int!
    "Always 1: a vCPU is counted as a core."
    threadsPerCore: Int!
    ramGbPerVcpu: Float!
    "vCPU counts an instance may have (powers of two)."
    vcpuCounts: [Int!]!
    stockStatus: String!
  }

  type PodTemplate {
    id: String!
    name: String!
    imageName: String!
    dockerArgs: String!
    containerDiskInGb: Int!
    volumeInGb: Int!
    volumeMountPath: String
    "comma-separated <port>/<protocol>"
    ports: String!
    "Each port's number; names are not kept, so name is null."
    portsConfig: [PortConfig!]!
    env: [EnvironmentVariable!]!
    containerRegistryAuthId: String
    isServerless: Boolean!
    isPublic: Boolean!
    isRunpod: Boolean!
    category: String!
    startSsh: Boolean!
    startJupyter: Boolean!
    "Not offered: always null."
    startScript: String
    "Not kept: always empty."
    readme: String!
    "Not kept: always false."
    advancedStart: Boolean!
  }

  "A port number, as an integer or a string (runpodctl sends and reads strings)."
  scalar PortNumber

  type PortConfig {
    "The port number, as a string, as runpodctl reads it."
    port: String!
    name: String
  }

  type ServerlessGpuPool {
    "e.g. AMPERE_24"
    id: String!
    gpuTypeIds: [String!]!
  }

  "Registry credentials: only id and name ever come back."
  type RegistryAuth {
    id: String!
    name: String!
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

  input GpuTypeFilter {
    id: String
    "true: only the types instant clusters can use (NVIDIA)."
    cluster: Boolean
  }

  "runpodctl declares podTemplates(input: PodTemplateInput)."
  input PodTemplateInput {
    isRunpod: Boolean
  }

  input GpuLowestPriceInput {
    gpuCount: Int
    "true: secure cloud only; false: community only; null or absent: either."
    secureCloud: Boolean
    minMemoryInGb: Int
    minVcpuCount: Int
    "Accepted and not used: container and volume disk are not a scarce resource here."
    totalDisk: Int
    dataCenterId: String
    "Only data centers in this country (ISO 3166-1 alpha-2)."
    countryCode: String
    "Accepted and not used, as totalDisk."
    minDisk: Int
    "Only hosts with at least this CUDA version."
    minCudaVersion: String
    allowedCudaVersions: [String]
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

  input SaveTemplateInput {
    "Absent: create. Given: update the caller's own template; absent or null fields are kept."
    id: String
    name: String
    imageName: String
    "Run through /bin/sh -c; empty: the image's default command."
    dockerArgs: String
    containerDiskInGb: Int
    "GB of a persistent volume for pods made from it; 0: none."
    volumeInGb: Int
    "Where that volume is mounted (default /workspace)."
    volumeMountPath: String
    "comma-separated <port>/<protocol>, e.g. 8888/http,22/tcp"
    ports: String
    env: [EnvironmentVariableInput]
    isServerless: Boolean
    "Registry credentials id; empty string: none."
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    "Not offered: only null or empty is accepted."
    startScript: String
    isPublic: Boolean
    "Accepted, not kept."
    readme: String
    "Accepted, not kept."
    advancedStart: Boolean
    "NVIDIA, AMD or CPU"
    category: String
    "Accepted, not kept: ports come from ports."
    portsConfig: [PortConfigInput]
  }

  input PortConfigInput {
    port: PortNumber
    name: String
  }

  "An account secret: its value never comes back."
  type Secret {
    id: String!
    name: String!
    description: String
  }

  input SecretCreateInput {
    "1 to 64 letters, digits or underscores; unique in the account"
    name: String!
    value: String!
    description: String
  }

  input SaveRegistryAuthInput {
    name: String!
    username: String!
    password: String!
  }

  input UpdateRegistryAuthInput {
    id: String!
    username: String!
    password: String!
  }

  input UpdateUserSettingsInput {
    "authorized_keys text: one key a line; blank lines and # comments allowed. null clears it."
    pubKey: String
  }
`
