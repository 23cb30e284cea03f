import { PodLifecycle } from '../control/pod-lifecycle.js'
import { isolationRefusal } from '../control/workload-isolation.js'
import { ClusterService } from '../domain/clusters/cluster-service.js'
import { memoryUsePercent } from '../domain/hosts/gpu-health.js'
import { PodService } from '../domain/pods/pod-service.js'
import {
  podsUsing,
  usesNetworkVolume,
  usesRegistry,
  usesTemplate,
} from '../domain/pods/pod-users.js'
import { RegistryService } from '../domain/registries/registry-service.js'
import type { EndpointService } from '../domain/serverless/endpoint-service.js'
import { TemplateService } from '../domain/templates/template-service.js'
import { VolumeService } from '../domain/volumes/volume-service.js'
import { DirectoryVolumeStorage } from '../runtime/volume-directories.js'
import { place } from '../scheduler/core/placement.js'
import { KyselyClusterRepo } from '../store/cluster-repo.js'
import { KyselyNetworkVolumeRepo } from '../store/network-volume-repo.js'
import { podStoreOf } from '../store/pod-repo.js'
import { KyselyRegistryRepo } from '../store/registry-repo.js'
import { KyselySecretRepo } from '../store/secret-repo.js'
import { SecretService } from '../domain/secrets/secret-service.js'
import { KyselyTemplateRepo } from '../store/template-repo.js'
import { hostPublicIp, type Host } from '../domain/catalog/fleet.js'
import type { RuntimeDriver } from '../runtime/driver.js'
import type { PlatformContext, PodParts } from './platform-context.js'
import { podChangedKey } from './replica-wiring.js'
import { hasSharedVolumeStorage } from '../domain/catalog/fleet.js'

/**
 * Pods (docs/pods.md) and what they are made of: templates, network volumes, registries, the
 * pod lifecycle loop, instant clusters. Endpoints use templates, volumes and registries too: who
 * uses one is asked of both.
 */
export function wirePods(context: PlatformContext): PodParts {
  const { config, store, clock, logger, parts } = context
  const podStore = podStoreOf(store, () => parts.fleet.board.offeredHosts())
  const endpointUsers: EndpointService['usersOf'] = (accountId, uses) =>
    parts.serverless.endpoints.usersOf(accountId, uses)
  const templateRepo = new KyselyTemplateRepo(store.db)
  const volumeStorage = new DirectoryVolumeStorage({
    dataDir: config.dataDir,
    dataCenterRoots: Object.fromEntries(
      parts.fleet.fleet.dataCenters.flatMap((dc) =>
        dc.networkVolumeRoot ? [[dc.id, dc.networkVolumeRoot]] : [],
      ),
    ),
  })
  const volumes = new VolumeService({
    repo: new KyselyNetworkVolumeRepo(store.db),
    fleet: parts.fleet.fleet,
    storage: volumeStorage,
    clock,
    usersOf: async (accountId, volumeId) => [
      ...(await podsUsing(podStore.pods, accountId, usesNetworkVolume(volumeId))),
      ...(await endpointUsers(accountId, { networkVolume: volumeId })),
    ],
    quotas: parts.accounts.quotas,
  })
  const registries = new RegistryService({
    repo: new KyselyRegistryRepo(store.db),
    box: parts.accounts.box,
    clock,
    usersOf: async (accountId, registryId) => [
      ...(await podsUsing(podStore.pods, accountId, usesRegistry(registryId))),
      ...(await endpointUsers(accountId, { registry: registryId })),
    ],
    // Templates only name a registry: deleting it clears it from them (docs/registries.md).
    detach: async (accountId, registryId) => {
      const using = (await templateRepo.listByAccount(accountId)).filter(
        (t) => t.registry === registryId,
      )
      for (const template of using) await templateRepo.update({ ...template, registry: null })
      return using.map((t) => `template ${t.id} (${t.name})`)
    },
  })
  // Account secrets share the registries' key: one key seals everything at rest.
  const secrets = new SecretService({
    repo: new KyselySecretRepo(store.db),
    box: parts.accounts.box,
    clock,
  })
  const registryExists = (accountId: string, id: string) => registries.exists(accountId, id)
  const templates = new TemplateService({
    repo: templateRepo,
    clock,
    registryExists,
    usersOf: async (accountId, templateId) => [
      ...(await podsUsing(podStore.pods, accountId, usesTemplate(templateId))),
      ...(await endpointUsers(accountId, { templateId })),
    ],
  })
  const { fleet, board, runtimeOf, driverFor } = parts.fleet
  // The hosts of each driver, for the fleet's hosts of `servedFor` (hosts change at runtime).
  let servedBy = new Map<RuntimeDriver, string[]>()
  let servedFor: readonly Host[] | undefined
  const servedByNow = () => {
    if (servedFor === fleet.hosts) return servedBy
    servedBy = new Map()
    for (const host of fleet.hosts) {
      const driver = driverFor(host.id)
      servedBy.set(driver, [...(servedBy.get(driver) ?? []), host.id])
    }
    servedFor = fleet.hosts
    return servedBy
  }
  const lifecycle = new PodLifecycle({
    timers: context.timers,
    store: podStore,
    ...(context.tracing ? { tracing: context.tracing } : {}),
    fleet,
    driverFor,
    drivers: parts.fleet.drivers,
    dataDir: config.dataDir,
    publicIp: config.publicIp,
    hostNetwork: (hostId) => {
      const host = board.host(hostId)
      return {
        publicIp: host ? hostPublicIp(host, config.publicIp) : config.publicIp,
        remote: runtimeOf(hostId).remote,
      }
    },
    hostDown: (hostId) => board.down(hostId),
    gpuUse: (hostId, index) => {
      const reading = parts.fleet.gpus.reading(hostId, index)
      if (!reading?.responding) return undefined
      return { util: Math.round(reading.utilPercent ?? 0), memoryUtil: memoryUsePercent(reading) }
    },
    driverDown: (driver) => {
      const served = servedByNow().get(driver) ?? []
      return served.length > 0 && served.every((id) => board.down(id) !== undefined)
    },
    // A pod's network volume is in its data center (placement keeps them together).
    volumePath: (volumeId, dataCenterId) => volumeStorage.path(volumeId, dataCenterId),
    volumeBoundGb: async (accountId, volumeId, dataCenterId) =>
      volumeStorage.isLocal(dataCenterId)
        ? (await volumes.find(accountId, volumeId))?.sizeGb
        : undefined,
    registryCredentials: (accountId, registryId) => registries.credentials(accountId, registryId),
    resolveEnv: (accountId, env) => secrets.resolveEnv(accountId, env),
    publicKeys: async (accountId) => (await parts.accounts.accounts.userSettings(accountId)).pubKey,
    isolationRefusal: (pod, hostDriver) =>
      isolationRefusal(hostDriver, pod.accountId, parts.fleet.isolationPolicy, {
        mountsVolume: (pod.mounts.network?.length ?? 0) > 0,
        // The same rule as the host view's and the workers' (hasSharedVolumeStorage).
        ...(pod.dataCenterId && hasSharedVolumeStorage(parts.fleet.fleet, pod.dataCenterId)
          ? { sharedStorageOf: pod.dataCenterId }
          : {}),
      }),
    clock,
    logger,
  })
  parts.fleet.driverAdded.push((driver) => lifecycle.watchDriver(driver))
  parts.fleet.fleetChanged.push(() => lifecycle.nudge())
  const pods = new PodService({
    store: podStore,
    ...(context.tracing ? { tracing: context.tracing } : {}),
    catalog: parts.fleet.catalog,
    place,
    runtime: lifecycle,
    references: {
      template: (accountId, id) => templates.resolve(accountId, id),
      registryExists,
      networkVolume: (accountId, id) => volumes.find(accountId, id),
    },
    clock,
    // The leader runs the lifecycle: another replica's change reaches it as a wake-up.
    nudge: (podId) => {
      lifecycle.nudge(podId)
      parts.replicas.wakeUps?.notify(podChangedKey(podId))
    },
    spendGuard: parts.billing.guard,
    quotas: parts.accounts.quotas,
  })
  return {
    podStore,
    templates,
    volumes,
    volumeStorage,
    registries,
    secrets,
    lifecycle,
    pods,
    clusters: new ClusterService({ repo: new KyselyClusterRepo(store.db), pods, clock }),
  }
}
