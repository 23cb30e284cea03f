import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import path from 'node:path'
import { parse as parseYaml } from 'yaml'
import type { Config } from '../config/schema.js'
import type { ContainedLimit } from '../shared/contained-limits.js'
import { cidrText } from '../shared/egress-cidrs.js'
import type { IsolationPolicy } from '../control/workload-isolation.js'
import { CatalogService } from '../domain/catalog/catalog-service.js'
import { demoFleet, noneFleet } from '../domain/catalog/demo-fleet.js'
import {
  hostRuntimeKind,
  parseFleet,
  withLocalHost,
  type Fleet,
  type HostDriver,
} from '../domain/catalog/fleet.js'
import { modelImageCommands } from '../domain/models/model-registry.js'
import { builtinImageCommands } from '../domain/templates/builtin-templates.js'
import type Docker from 'dockerode'
import { DockerDriver } from '../runtime/docker/docker-driver.js'
import { dockerConnectionOf } from '../runtime/docker/docker-endpoint.js'
import type { HostRuntime } from '../runtime/host-runtime.js'
import { NoRuntimeDriver } from '../runtime/no-runtime-driver.js'
import type { RuntimeDriver, WorkloadIsolation } from '../runtime/driver.js'
import {
  discoverLocalHost,
  type LocalGpus,
  type LocalHostFacts,
} from '../runtime/host-discovery.js'
import { ProcessDriver } from '../runtime/process/process-driver.js'
import { GpuBoard } from '../domain/hosts/gpu-board.js'
import { HostBoard } from '../domain/hosts/host-board.js'
import { KyselyAllocationRepo } from '../store/allocation-repo.js'
import { KyselyHostStateRepo } from '../store/host-state-repo.js'
import type { FleetParts, PlatformContext } from './platform-context.js'
import { platformServerIds, type PlatformServerIds } from './server-id-wiring.js'

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
  const fleet = await loadFleet(config.fleet, { localDriver: config.driver, discovered })
  const processDriver = new ProcessDriver({
    stateDir: path.join(config.dataDir, 'runtime', 'process'),
    images: {
      ...builtinImageCommands(process.execPath),
      ...modelImageCommands(process.execPath),
      ...config.images,
    },
    sandbox: config.sandbox,
    network: config.podNetwork,
    ...(config.containment.egress ? { egress: config.containment.egress } : {}),
    ...(config.bwrapPath ? { bwrapPath: config.bwrapPath } : {}),
    logMaxBytes: workloadLogMaxBytes(config),
    diskBound: config.containment.processDisk ?? 'auto',
    diskImagesUnder: config.dataDir,
    clock,
  })
  const serverIds = await platformServerIds(store, config.dataDir, logger)
  const hosts = await hostRuntimesOf(
    config,
    fleet,
    serverIds,
    processDriver,
    options.localDriver,
    discovered.gpus,
  )
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
      `this machine's workloads are not held to ${unaccepted.map((u) => u.limit).join(', ')}: only the admin account's are started (containment.acceptUnenforced, docs/security.md)`,
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
  await board.refresh()
  const gpus = new GpuBoard(() => clock.now().toISOString())
  return {
    fleet,
    board,
    gpus,
    catalog: new CatalogService(
      fleet,
      new KyselyAllocationRepo(store.db),
      () => board.unplaceable(),
      () => board.offeredHosts(),
      () => gpus.withdrawn(),
    ),
    processDriver,
    runtimeOf: (hostId) => hosts.runtimes.get(hostId) ?? noRuntime(hostId, `no host ${hostId}`),
    driverFor: (hostId) => hosts.runtimes.get(hostId)?.driver ?? hosts.drivers[0]!,
    drivers: hosts.drivers,
    isolation,
    isolationPolicy,
  }
}

/**
 * How each host of the fleet is reached (docs/fleet.md, "Remote hosts"):
 * - the local host and simulated hosts run here: the process driver, or this machine's engine
 *   (docker.socketPath) with `driver: docker`, checked to answer before the server starts;
 *   simulated docker hosts get their own instance that names their virtual GPUs in the env
 *   instead of requesting devices (both see the same containers: one server id);
 * - a host with `docker.url` has a DockerDriver of its own on that engine, over SSH (host key
 *   checked against knownHosts) or TCP+TLS; it is probed, never required at start;
 * - a real host (`simulated: false`) without `docker.url`, or whose endpoint files cannot be
 *   read, runs nothing: a NoRuntimeDriver, so that it is DOWN and never silently local.
 */
async function hostRuntimesOf(
  config: Readonly<Config>,
  fleet: Fleet,
  serverIds: PlatformServerIds,
  processDriver: ProcessDriver,
  localDriver: RuntimeDriver = processDriver,
  localGpus: LocalGpus | null = null,
): Promise<{ runtimes: Map<string, HostRuntime>; drivers: RuntimeDriver[] }> {
  // One id for every engine, from the database: every replica sees the same containers.
  const base = { ...serverIds, logMaxBytes: workloadLogMaxBytes(config) }
  const localEngines = new Map<boolean, DockerDriver>()
  const drivers: RuntimeDriver[] = [localDriver]
  const runtimes = new Map<string, HostRuntime>()
  const localEngine = async (simulatedGpus: boolean): Promise<DockerDriver> => {
    let docker = localEngines.get(simulatedGpus)
    if (!docker) {
      docker = new DockerDriver({
        ...base,
        ...(config.docker.socketPath ? { socketPath: config.docker.socketPath } : {}),
        simulatedGpus,
        // nvidia-smi here listed this machine's GPUs at start: no probe container needed.
        ...(localGpus?.details && !simulatedGpus
          ? { knownGpus: { gpus: localGpus.details, cudaVersion: localGpus.cudaVersion } }
          : {}),
        // This machine's engine: its containers may call the API (workers do), nothing else here.
        hostFirewall: {
          allowedPorts: config.port ? [config.port] : [],
          // The operator's egress policy, as for the process driver's namespaces.
          deniedDestinations: (config.containment.egress?.deny ?? []).map(cidrText),
          allowedDestinations: (config.containment.egress?.allow ?? []).map(cidrText),
        },
      })
      await docker.ping()
      localEngines.set(simulatedGpus, docker)
      drivers.push(docker)
    }
    return docker
  }
  // One probe per engine, shared by the hosts it serves: the monitor probes each engine once.
  const probes = new Map<RuntimeDriver, HostRuntime['probe']>()
  const probeHere = async () => null
  for (const host of fleet.hosts) {
    const kind = hostRuntimeKind(host)
    if (kind === 'here' && host.driver === 'process') {
      runtimes.set(host.id, {
        hostId: host.id,
        driver: localDriver,
        where: 'this machine (process driver)',
        remote: false,
        probe: probeHere,
      })
    } else if (kind === 'here') {
      const docker = await localEngine(host.simulated)
      let probe = probes.get(docker)
      if (!probe) {
        probe = () => docker.probe()
        probes.set(docker, probe)
      }
      runtimes.set(host.id, { ...engineRuntime(host.id, docker, false), probe })
    } else if (kind === 'engine' && host.docker) {
      let connection: { options: Docker.DockerOptions; where: string } | undefined
      let refusal: string | undefined
      try {
        connection = { options: dockerConnectionOf(host.docker), where: host.docker.url }
      } catch (error) {
        refusal = `${host.docker.url}: ${(error as Error).message}`
      }
      if (connection) {
        const docker = new DockerDriver({ ...base, connection, simulatedGpus: host.simulated })
        drivers.push(docker)
        runtimes.set(host.id, engineRuntime(host.id, docker, true))
      } else {
        runtimes.set(host.id, noRuntime(host.id, refusal ?? 'no engine'))
      }
    } else {
      runtimes.set(
        host.id,
        noRuntime(
          host.id,
          `host ${host.id} is declared real (simulated: false) but names no engine ` +
            '(docker.url); its pods never run on this machine instead',
        ),
      )
    }
  }
  return { runtimes, drivers }
}

function engineRuntime(hostId: string, docker: DockerDriver, remote: boolean): HostRuntime {
  return { hostId, driver: docker, where: docker.where, remote, probe: () => docker.probe() }
}

function noRuntime(hostId: string, reason: string): HostRuntime {
  const driver = new NoRuntimeDriver(reason)
  return {
    hostId,
    driver,
    where: 'no runtime',
    remote: true,
    probe: () => Promise.reject(new Error(reason)),
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
  ]
}

/** The limits the process driver leaves unenforced here, and what that means for accounts. */
function unenforcedBanner(
  isolation: WorkloadIsolation,
  accepted: readonly ContainedLimit[],
): string[] {
  return (isolation.unenforced ?? []).map(
    (u) =>
      `  unenforced    ${u.limit}: ${u.reason}; ` +
      (accepted.includes(u.limit)
        ? 'accepted for every account (containment.acceptUnenforced)'
        : "only the admin account's workloads start (containment.acceptUnenforced)"),
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
