import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import path from 'node:path'
import { parse as parseYaml } from 'yaml'
import type { Config } from '../config/schema.js'
import {
  sharedVolumeStorageUnenforced,
  unacceptedConsequence,
  type ContainedLimit,
} from '../shared/contained-limits.js'
import { DEFAULT_DISK_WRITE_RULE } from '../runtime/workload-limits.js'
import type { IsolationPolicy } from '../control/workload-isolation.js'
import { CatalogService } from '../domain/catalog/catalog-service.js'
import { demoFleet, noneFleet } from '../domain/catalog/demo-fleet.js'
import {
  LOCAL_HOST_ID,
  withLocalHost,
  type Fleet,
  type HostDriver,
} from '../domain/catalog/fleet.js'
import { parseFleet } from '../domain/catalog/fleet-parse.js'
import { modelImageCommands } from '../domain/models/model-registry.js'
import { builtinImageCommands } from '../domain/templates/builtin-templates.js'
import type { RuntimeDriver, WorkloadIsolation } from '../runtime/driver.js'
import { discoverLocalHost, type LocalHostFacts } from '../runtime/host-discovery.js'
import { DiskBounds } from '../runtime/disk-bounds/disk-bounds.js'
import { ProcessDriver } from '../runtime/process/process-driver.js'
import { GpuBoard } from '../domain/hosts/gpu-board.js'
import { ManagedHostService } from '../domain/hosts/managed-hosts.js'
import { KyselyContainerLogNumbersRepo } from '../store/container-log-numbers-repo.js'
import { KyselyManagedHostRepo } from '../store/managed-host-repo.js'
import { adoptLogNumberFiles, HostRuntimes, noRuntime } from './host-runtimes.js'
import { KyselyGpuWithdrawalRepo } from '../store/gpu-withdrawal-repo.js'
import { HostBoard } from '../domain/hosts/host-board.js'
import { KyselyAccountPoolRepo } from '../store/account-pool-repo.js'
import { KyselyAllocationRepo } from '../store/allocation-repo.js'
import { KyselyHostStateRepo } from '../store/host-state-repo.js'
import type { FleetParts, PlatformContext } from './platform-context.js'
import { platformServerIds } from './server-id-wiring.js'

export async function loadFleet(
  setting: string,
  options: { localDriver?: HostDriver; discovered?: LocalHostFacts } = {},
): Promise<Fleet> {
  const declared =
    setting === 'demo'
      ? demoFleet
      : setting === 'none'
        ? noneFleet
        : parseFleet(parseYaml(readFileSync(setting, 'utf8')), setting)
  return withLocalHost(
    declared,
    options.discovered ?? (await discoverLocalHost()),
    options.localDriver ? { driver: options.localDriver } : {},
  )
}

/** What each workload's log may take on disk, in bytes (config `workloadLogs.maxMb`, MiB). */
function workloadLogMaxBytes(config: Readonly<Config>): number {
  return config.workloadLogs.maxMb * 1024 * 1024
}

/**
 * The fleet (config `fleet`), its catalog, and the runtime drivers of its hosts: the process
 * driver for every host without `driver: docker` (simulated hosts too: docs/fleet.md), and the
 * Docker engine for those with it. Whether workloads are sandboxed is decided now (a bubblewrap
 * probe), so that the banner can say it.
 */
export async function wireFleet(
  context: PlatformContext,
  options: { localDriver?: RuntimeDriver } = {},
): Promise<FleetParts> {
  const { config, store, clock, logger, parts } = context
  const discovered = await discoverLocalHost()
  // A copy: its hosts change as hosts are added at runtime (the built-in fleets are shared).
  const fleet = { ...(await loadFleet(config.fleet, { localDriver: config.driver, discovered })) }
  const configuredHosts = fleet.hosts
  // One for every driver on this machine: a network volume is mounted once, whoever mounts it.
  const diskBounds = new DiskBounds({
    mode: config.containment.processDisk ?? 'auto',
    root: config.dataDir,
    probeDir: path.join(config.dataDir, 'runtime'),
  })
  const processDriver = new ProcessDriver({
    stateDir: path.join(config.dataDir, 'runtime', 'process'),
    images: {
      ...builtinImageCommands(process.execPath),
      ...modelImageCommands(process.execPath),
      ...config.images,
    },
    // Those images run the server's own Node.js, which a sandbox must show where it is.
    hostExecutables: [process.execPath],
    sandbox: config.sandbox,
    network: config.podNetwork,
    ...(config.containment.egress ? { egress: config.containment.egress } : {}),
    ...(config.bwrapPath ? { bwrapPath: config.bwrapPath } : {}),
    logMaxBytes: workloadLogMaxBytes(config),
    diskWriteRule: { ...DEFAULT_DISK_WRITE_RULE, ...config.containment.diskWrite },
    disks: diskBounds,
    clock,
  })
  const serverIds = await platformServerIds(store, config.dataDir, logger)
  const logNumbers = new KyselyContainerLogNumbersRepo(store.db, () => clock.now().toISOString())
  await adoptLogNumberFiles(config.dataDir, logNumbers)
  const hosts = new HostRuntimes(
    config,
    serverIds,
    { maxBytes: workloadLogMaxBytes(config), numbers: logNumbers },
    options.localDriver ?? processDriver,
    discovered.gpus,
    diskBounds,
  )
  await hosts.set(fleet.hosts, true)
  const isolation = await processDriver.isolation()
  if (config.docker.diskLimit) {
    logger.warn(
      'docker.diskLimit is ignored: a container disk is limited wherever the engine enforces sizes (docs/runtime.md)',
    )
  }
  if (isolation.level === 'none') {
    logger.warn(
      { reason: isolation.detail, sandbox: config.sandbox },
      config.sandbox === 'none'
        ? "workloads run unsandboxed as the server's user (sandbox: none)"
        : "workloads run unsandboxed: only the admin account's are started (docs/security.md)",
    )
  }
  const unaccepted = (isolation.unenforced ?? []).filter(
    (u) => !config.containment.acceptUnenforced.includes(u.limit),
  )
  if (unaccepted.length > 0) {
    logger.warn(
      { unenforced: isolation.unenforced },
      `this machine's workloads are not held to ${unaccepted.map((u) => u.limit).join(', ')}: ` +
        `${unacceptedConsequence(unaccepted.find((u) => u.limit !== 'volume')?.limit ?? 'volume')} (containment.acceptUnenforced, docs/security.md)`,
    )
  }
  const isolationPolicy: IsolationPolicy = {
    // The operator's own account, and the platform's public models, whose code is podyard's
    // build or what the operator configured (docs/security.md).
    trusted: async (accountId) =>
      accountId === parts.accounts.modelsAccount.id ||
      (await parts.accounts.accounts.findAccount(accountId))?.role === 'admin',
    unisolatedForEveryone: config.sandbox === 'none',
    acceptUnenforced: config.containment.acceptUnenforced,
  }
  const board = new HostBoard(fleet, new KyselyHostStateRepo(store.db), () =>
    clock.now().toISOString(),
  )
  const gpus = new GpuBoard(new KyselyGpuWithdrawalRepo(store.db), () => clock.now().toISOString())
  await gpus.refresh()
  const fleetChanged: Array<() => void> = []
  const allocations = new KyselyAllocationRepo(store.db)
  const accountPools = new KyselyAccountPoolRepo(store.db)
  const managed = new ManagedHostService({
    repo: new KyselyManagedHostRepo(store.db),
    box: parts.accounts.box,
    configuredHosts,
    dataCenters: fleet.dataCenters,
    apply: async (added) => {
      const local = configuredHosts.filter((h) => h.id === LOCAL_HOST_ID)
      const next = [...configuredHosts.filter((h) => h.id !== LOCAL_HOST_ID), ...added, ...local]
      await hosts.set(next)
      fleet.hosts = next
      await board.refresh()
      gpus.keepHosts(new Set(next.map((h) => h.id)))
      for (const told of fleetChanged) told()
    },
    usersOf: async (hostId) => ({
      pods: (await parts.pods.podStore.pods.list({}))
        .filter((p) => p.hostId === hostId && p.status !== 'TERMINATED')
        .map((p) => ({ id: p.id, name: p.name, accountId: p.accountId, status: p.status })),
      workerIds: (await allocations.list())
        .filter((a) => a.hostId === hostId && a.ownerKind === 'worker')
        .map((a) => a.ownerId),
    }),
    now: () => clock.now().toISOString(),
  })
  await managed.sync()
  await board.refresh()
  hosts.onDriverAdded = (driver) => {
    for (const told of driverAdded) told(driver)
  }
  const driverAdded: Array<(driver: RuntimeDriver) => void> = []
  return {
    managed,
    fleetChanged,
    driverAdded,
    fleet,
    board,
    gpus,
    catalog: new CatalogService(
      fleet,
      allocations,
      () => board.unplaceable(),
      () => board.offeredHosts(),
      () => gpus.withdrawn(),
      (accountId) => accountPools.poolsOf(accountId),
    ),
    processDriver,
    runtimeOf: (hostId) => hosts.runtimes.get(hostId) ?? noRuntime(hostId, `no host ${hostId}`),
    driverFor: (hostId) => hosts.runtimes.get(hostId)?.driver ?? hosts.drivers[0]!,
    drivers: hosts.drivers,
    isolation,
    isolationPolicy,
  }
}

/** The banner's lines on the fleet and on how its workloads are isolated (docs/security.md). */
export function fleetBanner(config: Readonly<Config>, parts: FleetParts): string[] {
  const { fleet } = parts
  const gpuTypes = new Set(fleet.hosts.flatMap((h) => (h.gpu ? [h.gpu.typeId] : [])))
  const gpus = fleet.hosts.reduce((n, h) => n + (h.gpu?.count ?? 0), 0)
  const simulated = fleet.hosts.filter((h) => h.simulated).length
  return [
    `  fleet         ${config.fleet}: ${fleet.hosts.length} hosts (${simulated} simulated) in ` +
      `${fleet.dataCenters.length} data centers, ${gpus} GPUs of ${gpuTypes.size} types`,
    ...(simulated > 0 ? ['                (simulated hosts are not real hardware)'] : []),
    ...sandboxBanner(parts.isolation, config.sandbox),
    ...unenforcedBanner(parts.isolation, config.containment.acceptUnenforced),
    ...unenforcedBanner(
      {
        unenforced: fleet.dataCenters.flatMap((dc) =>
          dc.networkVolumeRoot ? [sharedVolumeStorageUnenforced(dc.id)] : [],
        ),
      },
      config.containment.acceptUnenforced,
    ),
  ]
}

/**
 * The limits the process driver, or a data center's shared storage, leaves unenforced here,
 * and what that means for accounts.
 */
function unenforcedBanner(
  isolation: Pick<WorkloadIsolation, 'unenforced'>,
  accepted: readonly ContainedLimit[],
): string[] {
  return (isolation.unenforced ?? []).map(
    (u) =>
      `  unenforced    ${u.limit}: ${u.reason}; ` +
      (accepted.includes(u.limit)
        ? 'accepted for every account (containment.acceptUnenforced)'
        : `${unacceptedConsequence(u.limit)} (containment.acceptUnenforced)`),
  )
}

function sandboxBanner(isolation: WorkloadIsolation, setting: Config['sandbox']): string[] {
  if (isolation.level !== 'none') return [`  sandbox       ${isolation.detail}`]
  const user = serverUser()
  if (setting === 'none') {
    return [
      `  sandbox       NONE (sandbox: none): every account's pods and workers run as ${user},`,
      '                and can read the data directory and signal this server',
    ]
  }
  if (setting === 'bubblewrap') {
    return [
      `  sandbox       NONE: ${isolation.detail}`,
      '                no pod or worker of the process driver starts until it works',
    ]
  }
  return [
    `  sandbox       NONE: ${isolation.detail}`,
    `                only the admin account's pods and workers run (unsandboxed, as ${user});`,
    "                other accounts' are refused: install bubblewrap, use the docker driver,",
    '                or set sandbox: none to accept the risk (docs/security.md)',
  ]
}

function serverUser(): string {
  try {
    return userInfo().username
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`
  }
}
