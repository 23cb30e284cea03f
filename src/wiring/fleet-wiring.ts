import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import path from 'node:path'
import { parse as parseYaml } from 'yaml'
import type { Config } from '../config/schema.js'
import type { IsolationPolicy } from '../control/workload-isolation.js'
import { CatalogService } from '../domain/catalog/catalog-service.js'
import { demoFleet, noneFleet } from '../domain/catalog/demo-fleet.js'
import { parseFleet, withLocalHost, type Fleet, type HostDriver } from '../domain/catalog/fleet.js'
import { modelImageCommands } from '../domain/models/model-registry.js'
import { builtinImageCommands } from '../domain/templates/builtin-templates.js'
import { DockerDriver } from '../runtime/docker/docker-driver.js'
import { loadServerId } from '../runtime/docker/server-id.js'
import type { RuntimeDriver, WorkloadIsolation } from '../runtime/driver.js'
import { discoverLocalHost } from '../runtime/host-discovery.js'
import { ProcessDriver } from '../runtime/process/process-driver.js'
import { KyselyAllocationRepo } from '../store/allocation-repo.js'
import type { FleetParts, PlatformContext } from './platform-context.js'

export async function loadFleet(
  setting: string,
  options: { localDriver?: HostDriver } = {},
): Promise<Fleet> {
  const declared =
    setting === 'demo'
      ? demoFleet
      : setting === 'none'
        ? noneFleet
        : parseFleet(parseYaml(readFileSync(setting, 'utf8')), setting)
  return withLocalHost(
    declared,
    await discoverLocalHost(),
    options.localDriver ? { driver: options.localDriver } : {},
  )
}

/**
 * The fleet (config `fleet`), its catalog, and the runtime drivers of its hosts: the process
 * driver for every host without `driver: docker` (simulated hosts too: docs/fleet.md), and the
 * Docker engine for those with it. Whether workloads are sandboxed is decided now (a bubblewrap
 * probe), so that the banner can say it.
 */
export async function wireFleet(context: PlatformContext): Promise<FleetParts> {
  const { config, store, clock, logger, parts } = context
  const fleet = await loadFleet(config.fleet, { localDriver: config.driver })
  const processDriver = new ProcessDriver({
    stateDir: path.join(config.dataDir, 'runtime', 'process'),
    images: {
      ...builtinImageCommands(process.execPath),
      ...modelImageCommands(process.execPath),
      ...config.images,
    },
    sandbox: config.sandbox,
    ...(config.bwrapPath ? { bwrapPath: config.bwrapPath } : {}),
    clock,
  })
  const hosts = await runtimeDriversOf(config, fleet, processDriver)
  const isolation = await processDriver.isolation()
  if (isolation.level === 'none') {
    logger.warn(
      { reason: isolation.detail, sandbox: config.sandbox },
      config.sandbox === 'none'
        ? "workloads run unsandboxed as the server's user (sandbox: none)"
        : "workloads run unsandboxed: only the admin account's are started (docs/security.md)",
    )
  }
  const isolationPolicy: IsolationPolicy = {
    // The operator's own account, and the platform's public models, whose code is podyard's
    // build or what the operator configured (docs/security.md).
    trusted: async (accountId) =>
      accountId === parts.accounts.modelsAccount.id ||
      (await parts.accounts.accounts.findAccount(accountId))?.role === 'admin',
    unisolatedForEveryone: config.sandbox === 'none',
  }
  return {
    fleet,
    catalog: new CatalogService(fleet, new KyselyAllocationRepo(store.db)),
    processDriver,
    driverFor: hosts.driverFor,
    drivers: hosts.drivers,
    isolation,
    isolationPolicy,
  }
}

/**
 * The runtime drivers of the fleet's hosts: one process driver (`process` hosts, and simulated
 * hosts that do not say `driver: docker`) and, for hosts that say `driver: docker`, a
 * DockerDriver on the one engine, checked to answer before the server starts. Simulated docker
 * hosts get their own instance that names their virtual GPUs in the env instead of requesting
 * devices; both see the same containers (one server id), so listing through either is the same.
 */
async function runtimeDriversOf(
  config: Readonly<Config>,
  fleet: Fleet,
  processDriver: ProcessDriver,
): Promise<{ driverFor: (hostId: string) => RuntimeDriver; drivers: RuntimeDriver[] }> {
  const dockerHosts = fleet.hosts.filter((h) => h.driver === 'docker')
  if (dockerHosts.length === 0) return { driverFor: () => processDriver, drivers: [processDriver] }
  const options = {
    serverId: loadServerId(config.dataDir),
    ...(config.docker.socketPath ? { socketPath: config.docker.socketPath } : {}),
    diskLimit: config.docker.diskLimit,
  }
  const byHost = new Map<string, DockerDriver>()
  const drivers: RuntimeDriver[] = [processDriver]
  for (const simulatedGpus of [false, true]) {
    const hosts = dockerHosts.filter((h) => h.simulated === simulatedGpus)
    if (hosts.length === 0) continue
    const docker = new DockerDriver({ ...options, simulatedGpus })
    await docker.ping()
    drivers.push(docker)
    for (const host of hosts) byHost.set(host.id, docker)
  }
  return { driverFor: (hostId) => byHost.get(hostId) ?? processDriver, drivers }
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
  ]
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
