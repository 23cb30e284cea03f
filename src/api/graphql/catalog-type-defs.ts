/**
 * The GraphQL schema's the catalog: GPU and CPU types, prices, data centers, and the hub listings.
 * Part of `typeDefs` (type-defs.ts).
 */
export const catalogTypeDefs = /* GraphQL */ `
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

  input GpuTypeFilter {
    id: String
    "true: only the types instant clusters can use (NVIDIA)."
    cluster: Boolean
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
`
