import { readdir, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import type { Config } from '../config/schema.js'
import { cidrText } from '../shared/egress-cidrs.js'
import { hostRuntimeKind, type Host } from '../domain/catalog/fleet.js'
import type { DiskBounds } from '../runtime/disk-bounds/disk-bounds.js'
import type { DockerDriver } from '../runtime/docker/docker-driver.js'
import type { LogNumbersKeeping } from '../runtime/docker/log-numbers-store.js'
import type { EngineConnectionOptions } from '../runtime/docker/docker-endpoint.js'
import type { RuntimeDriver } from '../runtime/driver.js'
import type { LocalGpus } from '../runtime/host-discovery.js'
import type { HostRuntime } from '../runtime/host-runtime.js'
import { NoRuntimeDriver } from '../runtime/no-runtime-driver.js'
import { DEFAULT_DISK_WRITE_RULE, type DiskWriteRule } from '../runtime/workload-limits.js'
import type { PlatformServerIds } from './server-id-wiring.js'

/**
 * The docker driver's modules, loaded for the fleet's first Docker host only: dockerode and
 * ssh2 take about 200 ms of CPU to load, which a server on the process driver alone (the
 * default) never needs.
 */
const dockerModules = async () => {
  const [driver, endpoint] = await Promise.all([
    import('../runtime/docker/docker-driver.js'),
    import('../runtime/docker/docker-endpoint.js'),
  ])
  return { DockerDriver: driver.DockerDriver, dockerConnectionOf: endpoint.dockerConnectionOf }
}

/** How a host is reached: a change of any of these gives it a new runtime. */
const reachedBy = (host: Host) =>
  JSON.stringify([hostRuntimeKind(host), host.driver, host.simulated, host.docker ?? null])

/**
 * How each host of the fleet is reached (docs/fleet.md, "Remote hosts"), kept as the fleet
 * changes (hosts added at runtime):
 * - the local host and simulated hosts run here: the process driver, or this machine's engine
 *   (docker.socketPath) with `driver: docker`, checked to answer when first needed;
 *   simulated docker hosts get their own instance that names their virtual GPUs in the env
 *   instead of requesting devices (both see the same containers: one server id);
 * - a host with `docker.url` has a DockerDriver of its own on that engine, over SSH (host key
 *   checked against knownHosts) or TCP+TLS; it is probed, never required at start;
 * - a real host (`simulated: false`) without `docker.url`, or whose endpoint files cannot be
 *   read, runs nothing: a NoRuntimeDriver, so that it is DOWN and never silently local.
 */
export class HostRuntimes {
  readonly runtimes = new Map<string, HostRuntime>()
  /** Every driver in use; the same array for the platform's life (the pod lifecycle lists it). */
  readonly drivers: RuntimeDriver[]
  private readonly localEngines = new Map<boolean, DockerDriver>()
  /** One probe per engine, shared by the hosts it serves: the monitor probes each engine once. */
  private readonly probes = new Map<RuntimeDriver, HostRuntime['probe']>()
  private readonly reached = new Map<string, string>()
  private readonly probeHere = async () => null
  /** Told of each driver added after start (a remote host added at runtime). */
  onDriverAdded: ((driver: RuntimeDriver) => void) | undefined

  constructor(
    private readonly config: Readonly<Config>,
    private readonly serverIds: PlatformServerIds,
    /** What a container's log may take, and where its numbers are kept (the store). */
    private readonly logs: { maxBytes: number; numbers: LogNumbersKeeping },
    private readonly localDriver: RuntimeDriver,
    private readonly localGpus: LocalGpus | null = null,
    /** This machine's disk bounds: its engine's containers get bounded network volumes. */
    private readonly diskBounds?: DiskBounds,
  ) {
    this.drivers = [localDriver]
  }

  /**
   * Gives every host of the list its runtime, keeps those whose access did not change, and
   * forgets the hosts no longer listed. `strict` (at start): this machine's engine must answer.
   */
  async set(hosts: readonly Host[], strict = false): Promise<void> {
    const listed = new Set(hosts.map((h) => h.id))
    for (const id of [...this.runtimes.keys()]) {
      if (!listed.has(id)) {
        this.runtimes.delete(id)
        this.reached.delete(id)
      }
    }
    for (const host of hosts) {
      const key = reachedBy(host)
      if (this.reached.get(host.id) === key) continue
      this.runtimes.set(host.id, await this.runtimeOf(host, strict))
      this.reached.set(host.id, key)
    }
    // A remote engine no host uses any more is let go and closed, its log follows ended
    // (this machine's stay).
    const used = new Set([...this.runtimes.values()].map((r) => r.driver))
    for (let i = this.drivers.length - 1; i >= 1; i -= 1) {
      const driver = this.drivers[i]!
      if (!used.has(driver) && ![...this.localEngines.values()].includes(driver as DockerDriver)) {
        this.drivers.splice(i, 1)
        this.probes.delete(driver)
        await driver.close().catch(() => undefined)
      }
    }
  }

  /** containment.diskWrite, its defaults filled in. */
  private get diskWriteRule(): DiskWriteRule {
    return { ...DEFAULT_DISK_WRITE_RULE, ...this.config.containment.diskWrite }
  }

  private addDriver(driver: RuntimeDriver): void {
    this.drivers.push(driver)
    this.onDriverAdded?.(driver)
  }

  private async localEngine(simulatedGpus: boolean): Promise<DockerDriver> {
    let docker = this.localEngines.get(simulatedGpus)
    if (!docker) {
      const localGpus = this.localGpus
      const { DockerDriver } = await dockerModules()
      docker = new DockerDriver({
        ...this.serverIds,
        logMaxBytes: this.logs.maxBytes,
        logNumbers: this.logs.numbers,
        gpuProbeImage: this.config.gpus.probeImage,
        diskWriteRule: this.diskWriteRule,
        ...(this.config.docker.socketPath ? { socketPath: this.config.docker.socketPath } : {}),
        simulatedGpus,
        // nvidia-smi here listed this machine's GPUs at start: no probe container needed.
        ...(localGpus?.details && !simulatedGpus
          ? { knownGpus: { gpus: localGpus.details, cudaVersion: localGpus.cudaVersion } }
          : {}),
        // This machine's engine: its network volumes are on this machine's storage.
        ...(this.diskBounds ? { volumeBounds: this.diskBounds } : {}),
        // This machine's engine: its containers may call the API (workers do), nothing else here.
        hostFirewall: {
          allowedPorts: this.config.port ? [this.config.port] : [],
          // The operator's egress policy, as for the process driver's namespaces.
          deniedDestinations: (this.config.containment.egress?.deny ?? []).map(cidrText),
          allowedDestinations: (this.config.containment.egress?.allow ?? []).map(cidrText),
        },
      })
      await docker.ping()
      this.localEngines.set(simulatedGpus, docker)
      this.addDriver(docker)
    }
    return docker
  }

  private async runtimeOf(host: Host, strict: boolean): Promise<HostRuntime> {
    const kind = hostRuntimeKind(host)
    if (kind === 'here' && host.driver === 'process') {
      return {
        hostId: host.id,
        driver: this.localDriver,
        where: 'this machine (process driver)',
        remote: false,
        probe: this.probeHere,
      }
    }
    if (kind === 'here') {
      let docker: DockerDriver
      try {
        docker = await this.localEngine(host.simulated)
      } catch (error) {
        if (strict) throw error
        return noRuntime(host.id, `this machine's Docker engine: ${(error as Error).message}`)
      }
      let probe = this.probes.get(docker)
      if (!probe) {
        probe = () => docker.probe()
        this.probes.set(docker, probe)
      }
      return { ...engineRuntime(host.id, docker, false), probe }
    }
    if (kind === 'engine' && host.docker) {
      const { DockerDriver, dockerConnectionOf } = await dockerModules()
      let connection: { options: EngineConnectionOptions; where: string }
      try {
        connection = { options: dockerConnectionOf(host.docker), where: host.docker.url }
      } catch (error) {
        return noRuntime(host.id, `${host.docker.url}: ${(error as Error).message}`)
      }
      const docker = new DockerDriver({
        ...this.serverIds,
        logMaxBytes: this.logs.maxBytes,
        logNumbers: this.logs.numbers,
        gpuProbeImage: this.config.gpus.probeImage,
        diskWriteRule: this.diskWriteRule,
        ...(host.docker.dataDisk ? { dataDisk: host.docker.dataDisk } : {}),
        connection,
        simulatedGpus: host.simulated,
      })
      this.addDriver(docker)
      return engineRuntime(host.id, docker, true)
    }
    return noRuntime(
      host.id,
      `host ${host.id} is declared real (simulated: false) but names no engine ` +
        '(docker.url); its pods never run on this machine instead',
    )
  }
}

function engineRuntime(hostId: string, docker: DockerDriver, remote: boolean): HostRuntime {
  return {
    hostId,
    driver: docker,
    where: docker.where,
    remote,
    probe: () => docker.probe(),
    ...(docker.nvidiaSmi ? { nvidiaSmi: docker.nvidiaSmi } : {}),
  }
}

export function noRuntime(hostId: string, reason: string): HostRuntime {
  const driver = new NoRuntimeDriver(reason)
  return {
    hostId,
    driver,
    where: 'no runtime',
    remote: true,
    probe: () => Promise.reject(new Error(reason)),
  }
}

/**
 * The log numbers an earlier version kept in files of the data directory
 * (`runtime/docker-log-numbers/<containerId>.json`), moved into the store once: the store's
 * row wins where both exist, and the folder goes.
 */
export async function adoptLogNumberFiles(dataDir: string, store: LogNumbersKeeping) {
  const dir = path.join(dataDir, 'runtime', 'docker-log-numbers')
  const files = await readdir(dir).catch(() => [])
  for (const file of files) {
    const containerId = /^([a-f0-9]{12,64})\.json$/.exec(file)?.[1]
    if (!containerId || (await store.read(containerId)) !== undefined) continue
    await store.write(containerId, await readFile(path.join(dir, file), 'utf8'))
  }
  await rm(dir, { recursive: true, force: true })
}
