import { GraphQLError, GraphQLScalarType, Kind } from 'graphql'
import type { QuotaService } from '../../domain/quotas/quota-service.js'
import type { IResolvers, MercuriusContext } from 'mercurius'
import { decideAccess } from '../../domain/accounts/access.js'
import type { AccountService } from '../../domain/accounts/account-service.js'
import type { CreditService } from '../../domain/billing/credit-service.js'
import type { CatalogService, StockViewer } from '../../domain/catalog/catalog-service.js'
import { findCpuFlavor, MIN_VCPU_COUNT } from '../../domain/catalog/cpu-flavors.js'
import type { ModelService } from '../../domain/models/model-service.js'
import type { Pod } from '../../domain/pods/pod.js'
import { costOf } from '../../domain/pods/pod-rules.js'
import type { PodService } from '../../domain/pods/pod-service.js'
import type { RegistryService } from '../../domain/registries/registry-service.js'
import type { SecretService } from '../../domain/secrets/secret-service.js'
import type { TemplateService } from '../../domain/templates/template-service.js'
import type { VolumeService } from '../../domain/volumes/volume-service.js'
import type { Endpoint } from '../../domain/serverless/endpoint.js'
import type { EndpointService } from '../../domain/serverless/endpoint-service.js'
import type { WorkerKeyService } from '../../domain/serverless/worker-keys.js'
import { AppError, isAppError } from '../../shared/app-error.js'
import type { Clock } from '../../shared/clock.js'
import {
  cpuFlavorView,
  cpuTypeView,
  dataCenterView,
  gpuTypeView,
  isClusterType,
  serverlessGpuPoolsView,
} from './catalog-view.js'
import type { ClusterService } from '../../domain/clusters/cluster-service.js'
import { clusterAndVolumeMutations } from './cluster-volume-mutations.js'
import { endpointDefinition, endpointView, type EndpointInput } from './endpoint-input.js'
import { deployPod } from './pod-deploy.js'
import {
  cpuDeployRequest,
  gpuDeployRequest,
  spotDeployRequest,
  type SpotPodInput,
  type CpuPodInput,
  type GpuPodInput,
} from './pod-input.js'
import { podView } from './pod-view.js'
import { publicConfigView } from './public-config-view.js'
import { PUBLIC_ROOT_FIELDS } from './public-operations.js'
import { templateSave, type SaveTemplateInput } from './template-input.js'
import { templateView } from './template-view.js'

export interface GraphqlServices {
  accounts: AccountService
  credits: CreditService
  pods: PodService
  catalog: CatalogService
  templates: TemplateService
  volumes: VolumeService
  registries: RegistryService
  /** Account secrets (secretCreate, secretDelete); those mutations answer an error without it. */
  secrets?: SecretService
  endpoints: EndpointService
  /** Worker keys: `aiKey` is the endpoint's (`RUNPOD_AI_API_KEY` of its workers). */
  workerKeys: WorkerKeyService
  clock: Clock
  /** Current spend including serverless workers (docs/billing.md); pods only without it. */
  spend?: { currentSpendPerHour(accountId: string): Promise<number> }
  /** The public models, listed by `allAiApiPublicConfigs` (none without it). */
  models?: ModelService
  /** Instant clusters (createCluster, deleteCluster); those mutations answer an error without it. */
  clusters?: ClusterService
  /** The admin's quotas (docs/billing.md, "Quotas"); `myself.quotas` is null without it. */
  quotas?: QuotaService
}

/** deployCpuPod's flavor when runpod-python sends no instanceId: cpu3c, as its docs' example. */
export const DEFAULT_CPU_FLAVOR = 'cpu3c'

/** A port given as an integer or a string of digits (runpodctl sends strings); answered as text. */
const portNumber = (value: unknown): string => {
  const text = typeof value === 'number' ? String(value) : value
  const port = typeof text === 'string' && /^\d{1,5}$/.test(text) ? Number(text) : NaN
  if (!(port >= 1 && port <= 65535)) {
    throw new GraphQLError(
      `a port must be a number from 1 to 65535, or a string of one; got ${JSON.stringify(value)}`,
    )
  }
  return String(port)
}

const PortNumber = new GraphQLScalarType({
  name: 'PortNumber',
  description: 'A port number, as an integer or a string (runpodctl sends and reads strings).',
  serialize: portNumber,
  parseValue: portNumber,
  parseLiteral: (ast) => {
    if (ast.kind === Kind.INT || ast.kind === Kind.STRING) return portNumber(ast.value)
    throw new GraphQLError('a port must be an integer or a string')
  },
})

type Resolver = (root: unknown, args: never, context: MercuriusContext) => unknown

/** Every mutation changes state, so a read-only key gets FORBIDDEN before it runs. */
function writing(resolve: Resolver): Resolver {
  return (root, args, context) => {
    const access = decideAccess(context.principal, { write: true })
    if (!access.allowed)
      throw new AppError('FORBIDDEN', `${access.detail}: mutations need a read-write key`)
    return resolve(root, args, context)
  }
}

/**
 * Requests without a key reach only the public root fields (graphql-routes.ts checks the
 * document); this is the second lock, so a field added later is never public by mistake.
 */
function signedIn(resolve: Resolver): Resolver {
  return (root, args, context) => {
    if (!context.principal) {
      throw new AppError('UNAUTHENTICATED', 'an API key is required for this field')
    }
    return resolve(root, args, context)
  }
}

/**
 * Whose stock a catalog field counts: the caller's account (its pools), or, on the public
 * fields asked without a key, an account bound to no pool.
 */
function stockViewerOf(context: MercuriusContext): StockViewer {
  // The public fields run without a principal, whatever its declared type says.
  const principal = context.principal as MercuriusContext['principal'] | undefined
  return { accountId: principal?.accountId ?? null }
}

/**
 * The domain names the fields of its validation problems as REST bodies do (`body.name`);
 * over GraphQL the same field is `input.name`.
 */
async function asGraphqlInput<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (!isAppError(error) || error.code !== 'VALIDATION_FAILED') throw error
    const rename = (line: string) => line.replace(/\bbody\./g, 'input.')
    throw new AppError(error.code, rename(error.detail), {
      ...(error.errors ? { errors: error.errors.map(rename) } : {}),
    })
  }
}

/** Operation inputs are nullable in the SDL (runpodctl declares them so); absent is a 422-like error. */
function need<T>(input: T | null | undefined): T {
  if (input !== null && input !== undefined) return input
  throw new AppError('VALIDATION_FAILED', 'the request failed validation: input: is required', {
    errors: ['input: is required'],
  })
}

/** RunPod's answer to podTerminate of a pod it does not know; dstack matches this text. */
export const POD_NOT_FOUND_TO_TERMINATE = 'pod not found to terminate'

const present = <T>(value: T | null | undefined): value is T =>
  value !== null && value !== undefined

export function buildResolvers(services: GraphqlServices): IResolvers {
  const { accounts, pods, catalog, templates, volumes, registries, endpoints, clock } = services
  const secretService = () => {
    if (!services.secrets) throw new AppError('NOT_OFFERED', 'account secrets are not offered here')
    return services.secrets
  }
  const view = (pod: Pod) =>
    podView(pod, {
      hostOf: (id) => catalog.host(id),
      now: () => clock.now(),
      runtimeOf: (p) => pods.runtimeOf(p),
    })

  /** The `Myself` object; each field is loaded only when the document selects it. */
  const myself = async (accountId: string) => {
    const user = await accounts.primaryUser(accountId)
    if (!user) throw new AppError('NOT_FOUND', 'account not found')
    const listed = () => pods.list(accountId, { includeClusterPods: true })
    return {
      id: accountId,
      authId: user.id,
      email: user.email,
      containerRegistryCreds: async () =>
        (await registries.list(accountId))
          .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
          .map(registryView),
      pods: async () => (await listed()).map(view),
      pubKey: async () => (await accounts.userSettings(accountId)).pubKey,
      clientBalance: async () => (await services.credits.credit(accountId)).balance,
      spendLimit: async () => (await services.credits.credit(accountId)).spendLimit,
      currentSpendPerHr: async () =>
        services.spend
          ? services.spend.currentSpendPerHour(accountId)
          : Math.round((await listed()).reduce((sum, pod) => sum + costOf(pod), 0) * 10_000) /
            10_000,
      networkVolumes: async () =>
        (await volumes.list(accountId)).map((v) => ({
          id: v.id,
          name: v.name,
          size: v.sizeGb,
          dataCenterId: v.dataCenterId,
          dataCenter: dataCenterRef(v.dataCenterId),
        })),
      podTemplates: async () => (await templates.list(accountId)).map(templateView),
      endpoints: async () => (await endpoints.list(accountId)).map(endpointObject),
      quotas: async () => (services.quotas ? services.quotas.report(accountId) : null),
      notifyPodsStale: false,
      notifyPodsGeneral: false,
      notifyLowBalance: false,
      serverlessDiscount: null,
    }
  }

  /** An endpoint with its volumes' data centers and its worker key loaded when selected. */
  const endpointObject = (endpoint: Endpoint) => {
    const volumesOf = async () =>
      Promise.all(
        endpoint.networkVolumes.map(async (id) => {
          const volume = await volumes.get(endpoint.accountId, id)
          return { id, networkVolumeId: id, dataCenterId: volume.dataCenterId }
        }),
      )
    return {
      ...endpointView(endpoint),
      networkVolumeIds: volumesOf,
      networkVolume: async () => (await volumesOf())[0] ?? null,
      // A worker key lets its holder take the endpoint's jobs: only read-write keys see it.
      aiKey: async (_args: unknown, { principal }: MercuriusContext) =>
        decideAccess(principal, { write: true }).allowed
          ? (await services.workerKeys.read(endpoint.accountId, endpoint.id)).workerKey
          : null,
    }
  }
  const definitionOf = (input: EndpointInput) =>
    endpointDefinition(input, {
      dataCenters: catalog.fleet.dataCenters,
      ramGbPerVcpu: (id) => findCpuFlavor(id)?.ramGbPerVcpu,
    })

  const dataCenterRef = (id: string) => ({
    id,
    name: catalog.fleet.dataCenters.find((dc) => dc.id === id)?.name ?? id,
  })

  const registryView = (registry: { id: string; name: string }) => ({
    id: registry.id,
    name: registry.name,
  })

  const mutations: Record<string, Resolver> = {
    saveEndpoint: async (
      _root,
      { input: given }: { input?: EndpointInput | null },
      { principal },
    ) => {
      const input = need(given)
      const definition = definitionOf(input)
      const saved = await asGraphqlInput(() =>
        input.id
          ? endpoints.replace(principal.accountId, input.id, definition)
          : endpoints.create(principal.accountId, definition),
      )
      return endpointObject(saved)
    },

    updateEndpointTemplate: async (
      _root,
      { input }: { input?: { endpointId: string; templateId: string } | null },
      { principal },
    ) => {
      const { endpointId, templateId } = need(input)
      return endpointObject(await endpoints.update(principal.accountId, endpointId, { templateId }))
    },

    deleteEndpoint: async (_root, { id }: { id?: string | null }, { principal }) => {
      await endpoints.delete(principal.accountId, need(id))
      return true
    },

    podFindAndDeployOnDemand: async (
      _root,
      { input }: { input?: GpuPodInput | null },
      { principal, trace },
    ) =>
      view(
        await deployPod(pods, catalog, principal.accountId, gpuDeployRequest(need(input)), trace),
      ),

    deployCpuPod: async (
      _root,
      { input }: { input?: CpuPodInput | null },
      { principal, trace },
    ) => {
      // Without instanceId: cpu3c when the fleet offers it (else the first flavor it offers),
      // with the fewest vCPUs a CPU pod may have.
      const flavors = await catalog.listCpuTypes()
      const flavor = flavors.find((f) => f.id === DEFAULT_CPU_FLAVOR) ?? flavors[0]
      const request = cpuDeployRequest(
        need(input),
        (id) => findCpuFlavor(id)?.ramGbPerVcpu,
        () => {
          if (!flavor) throw new AppError('NO_CAPACITY', 'no host of this fleet offers CPU pods')
          return { flavorId: flavor.id, vcpuCount: MIN_VCPU_COUNT }
        },
      )
      return view(await deployPod(pods, catalog, principal.accountId, request, trace))
    },

    podResume: async (
      _root,
      {
        input: given,
      }: {
        input?: {
          podId: string
          gpuCount?: number | null
          allowedCudaVersions?: Array<string | null> | null
        } | null
      },
      { principal },
    ) => {
      const input = need(given)
      const pod = await pods.get(principal.accountId, input.podId)
      const gpuCount = pod.compute.kind === 'gpu' ? pod.compute.gpuCount : 0
      if (input.gpuCount !== undefined && input.gpuCount !== null && input.gpuCount !== gpuCount) {
        throw new AppError(
          'RULE_CONFLICT',
          `pod ${pod.id} has ${gpuCount} GPUs and a pod's GPU count is fixed at create: resume it with gpuCount ${gpuCount}, or create a new pod`,
        )
      }
      const cudaVersions = (input.allowedCudaVersions ?? []).filter((v): v is string => !!v)
      return view(await pods.act(principal.accountId, input.podId, 'start', { cudaVersions }))
    },

    // GraphQL is desired-state: a stop may come before the pod has started (runpod-python's
    // stop_pod right after create_pod), and the pod then stops instead of starting.
    podStop: async (_root, { input }: { input?: { podId: string } | null }, { principal }) =>
      view(
        await pods.act(principal.accountId, need(input).podId, 'stop', {
          stopWhileProvisioning: true,
        }),
      ),

    podTerminate: async (_root, { input }: { input?: { podId: string } | null }, { principal }) => {
      try {
        await pods.terminate(principal.accountId, need(input).podId)
      } catch (error) {
        // RunPod's own words, which dstack matches to treat the pod as gone.
        if (isAppError(error) && error.code === 'NOT_FOUND') {
          throw new AppError('NOT_FOUND', POD_NOT_FOUND_TO_TERMINATE)
        }
        throw error
      }
      return true
    },

    podBidResume: async (
      _root,
      {
        input: given,
      }: { input?: { podId: string; bidPerGpu?: number | null; gpuCount?: number | null } | null },
      { principal },
    ) => {
      const input = need(given)
      const pod = await pods.get(principal.accountId, input.podId)
      const gpuCount = pod.compute.kind === 'gpu' ? pod.compute.gpuCount : 0
      if (present(input.gpuCount) && input.gpuCount !== gpuCount) {
        throw new AppError(
          'RULE_CONFLICT',
          `pod ${pod.id} has ${gpuCount} GPUs and a pod's GPU count is fixed at create: resume it with gpuCount ${gpuCount}`,
        )
      }
      if (!pod.spot) {
        throw new AppError(
          'RULE_CONFLICT',
          `pod ${pod.id} is an on-demand pod: start it with podResume`,
        )
      }
      const bidPerGpu = input.bidPerGpu ?? pod.spot.bidPerGpu
      return view(await pods.act(principal.accountId, pod.id, 'start', { bidPerGpu }))
    },
    podRentInterruptable: async (
      _root,
      { input }: { input?: SpotPodInput | null },
      { principal, trace },
    ) =>
      view(
        await deployPod(pods, catalog, principal.accountId, spotDeployRequest(need(input)), trace),
      ),

    saveTemplate: async (
      _root,
      { input: given }: { input?: SaveTemplateInput | null },
      { principal },
    ) => {
      const input = need(given)
      const { accountId } = principal
      // Read first: a moved volume path keeps the size, a resized volume keeps the path.
      const current = input.id ? await templates.get(accountId, input.id) : undefined
      const save = templateSave(input, current)
      const saved =
        save.kind === 'create'
          ? await templates.create(accountId, save.template)
          : await templates.update(accountId, save.id, save.patch)
      return templateView(saved)
    },

    deleteTemplate: async (
      _root,
      { templateName }: { templateName?: string | null },
      { principal },
    ) => {
      const name = need(templateName)
      const template = (await templates.list(principal.accountId)).find((t) => t.name === name)
      if (!template) throw new AppError('NOT_FOUND', `no template of yours is named "${name}"`)
      await templates.delete(principal.accountId, template.id)
      return true
    },

    saveRegistryAuth: async (
      _root,
      { input }: { input?: { name: string; username: string; password: string } | null },
      { principal },
    ) =>
      registryView(await asGraphqlInput(() => registries.create(principal.accountId, need(input)))),

    updateRegistryAuth: async (
      _root,
      { input: given }: { input?: { id: string; username: string; password: string } | null },
      { principal },
    ) => {
      const { id, username, password } = need(given)
      return registryView(
        await asGraphqlInput(() =>
          registries.update(principal.accountId, id, { username, password }),
        ),
      )
    },

    deleteRegistryAuth: async (
      _root,
      { registryAuthId }: { registryAuthId?: string | null },
      { principal },
    ) => {
      await registries.delete(principal.accountId, need(registryAuthId))
      return true
    },

    secretCreate: async (
      _root,
      { input }: { input?: { name: string; value: string; description?: string | null } | null },
      { principal },
    ) => {
      const secret = await asGraphqlInput(() =>
        secretService().create(principal.accountId, need(input)),
      )
      return { id: secret.id, name: secret.name, description: secret.description }
    },

    secretDelete: async (_root, { id }: { id?: string | null }, { principal }) => {
      await secretService().delete(principal.accountId, need(id))
      return null
    },

    updateUserSettings: async (
      _root,
      { input }: { input?: { pubKey?: string | null } | null },
      { principal },
    ) => {
      const { pubKey } = need(input)
      await asGraphqlInput(() =>
        accounts.updateUserSettings(principal.accountId, pubKey === undefined ? {} : { pubKey }),
      )
      return myself(principal.accountId)
    },
  }

  Object.assign(
    mutations,
    clusterAndVolumeMutations({
      pods,
      volumes,
      catalog,
      view,
      dataCenterRef,
      clusters: () => {
        if (!services.clusters) {
          throw new AppError('NOT_OFFERED', 'instant clusters are not offered here')
        }
        return services.clusters
      },
    }),
  )

  const queries: Record<string, Resolver> = {
    myself: async (_root, _args, { principal }) => myself(principal.accountId),

    pod: async (_root, { input }: { input?: { podId: string } | null }, { principal }) =>
      view(await pods.get(principal.accountId, need(input).podId)),

    gpuTypes: async (
      _root,
      { input }: { input?: { id?: string | null; cluster?: boolean | null } | null },
      context,
    ) => {
      const viewer = stockViewerOf(context)
      const types = input?.id
        ? [await catalog.getGpuType(input.id, {}, viewer)].filter((t) => t !== undefined)
        : await catalog.listGpuTypes({}, viewer)
      return types
        .filter((type) => input?.cluster !== true || isClusterType(type))
        .map((type) => gpuTypeView(catalog, type, viewer))
    },

    dataCenters: async (_root, _args, context) =>
      (await catalog.listDataCenters({ gpuDetail: true }, stockViewerOf(context))).map(
        dataCenterView,
      ),

    countryCodes: () => [
      ...new Set(
        catalog.fleet.dataCenters.flatMap((dc) => (dc.countryCode ? [dc.countryCode] : [])),
      ),
    ],

    cpuFlavors: async (_root, _args, context) =>
      (await catalog.listCpuTypes({ detail: true }, stockViewerOf(context))).map((flavor) =>
        cpuFlavorView(catalog, flavor),
      ),

    cpuTypes: async (_root, _args, context) =>
      (await catalog.listCpuTypes({}, stockViewerOf(context))).map(cpuTypeView),

    serverlessGpuPools: async (_root, _args, context) =>
      serverlessGpuPoolsView(await catalog.listGpuTypes({}, stockViewerOf(context))),

    allAiApiPublicConfigs: async () =>
      services.models ? (await services.models.publicConfigs()).map(publicConfigView) : [],

    listings: () => [],

    podTemplate: async (_root, { id }: { id?: string | null }, { principal }) =>
      templateView(await templates.get(principal.accountId, need(id))),

    podTemplates: async (
      _root,
      { input }: { input?: { isRunpod?: boolean | null } | null },
      { principal },
    ) => {
      const builtin = () => templates.catalog('official')
      const accounts = () => templates.list(principal.accountId, { includePublic: true })
      const list =
        input?.isRunpod === true
          ? await builtin()
          : input?.isRunpod === false
            ? await accounts()
            : [...(await builtin()), ...(await accounts())]
      return list.map(templateView)
    },
  }

  return {
    PortNumber,
    Query: Object.fromEntries(
      Object.entries(queries).map(([name, resolve]) => [
        name,
        PUBLIC_ROOT_FIELDS.has(name) ? resolve : signedIn(resolve),
      ]),
    ),
    Mutation: Object.fromEntries(
      Object.entries(mutations).map(([name, resolve]) => [name, signedIn(writing(resolve))]),
    ),
  } as IResolvers
}
