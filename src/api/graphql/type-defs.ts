import { serverlessTypeDefs } from './serverless-type-defs.js'
import { podTypeDefs } from './pod-type-defs.js'
import { catalogTypeDefs } from './catalog-type-defs.js'
import { templateTypeDefs } from './template-type-defs.js'

/**
 * The GraphQL schema (SDL). Names and shapes follow what RunPod's clients send and read
 * (wire-compat §6); docs/graphql.md lists every operation with an example. Resolvers only map
 * between these shapes and the domain services.
 *
 * Mutation results are nullable on purpose: a domain error must answer
 * `{"errors": [...], "data": {"<mutation>": null}}` (HTTP 200), which a non-null result type
 * would turn into `"data": null`.
 *
 * The root operations and the account are here; the other types, one file per area.
 */
const rootTypeDefs = /* GraphQL */ `
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

  input UpdateUserSettingsInput {
    "authorized_keys text: one key a line; blank lines and # comments allowed. null clears it."
    pubKey: String
  }
`

export const typeDefs = [
  rootTypeDefs,
  podTypeDefs,
  serverlessTypeDefs,
  catalogTypeDefs,
  templateTypeDefs,
].join('\n')
