import { GpuHealthWatch } from '../control/gpu-health-watch.js'
import { HostMonitor } from '../control/host-monitor.js'
import { PodMigration } from '../control/pod-migration.js'
import { RemoteGpuSampling } from '../control/remote-gpu-sampling.js'
import { hasSharedVolumeStorage, LOCAL_HOST_ID } from '../domain/catalog/fleet.js'
import { HostService, type DrainHook } from '../domain/hosts/host-service.js'
import { GpuSampler } from '../runtime/gpu/gpu-sampler.js'
import type { HostParts, PlatformContext } from './platform-context.js'

/**
 * The hosts as the operator manages them (docs/fleet.md, "Host state"): the leader's probe of
 * every host, which tells the pod lifecycle at once when one is lost or back, and the admin
 * service (list, cordon, uncordon, drain, GPU reset). Drain hooks are where serverless workers
 * are moved off a draining host. When this machine has NVIDIA GPUs (nvidia-smi found them at
 * start), one long-lived sampler reads them for the local host; the leader samples each remote
 * Docker host whose engine reported GPUs through a container there (docs/gpus.md).
 */
export function wireHosts(context: PlatformContext): HostParts {
  const { config, clock, logger, parts } = context
  const { fleet, board, gpus, runtimeOf } = parts.fleet
  const drainHooks: DrainHook[] = []
  const monitor = new HostMonitor({
    timers: context.timers,
    hosts: () => fleet.hosts,
    runtimeOf,
    board,
    clock,
    logger,
    intervalMs: config.hosts.probeIntervalMs,
    timeoutMs: config.hosts.probeTimeoutMs,
    failuresBeforeDown: config.hosts.failuresBeforeDown,
    onChange: () => parts.pods.lifecycle.nudge(),
  })
  const migration = new PodMigration({
    pods: parts.pods.pods,
    store: parts.pods.podStore,
    driverFor: parts.fleet.driverFor,
    clock,
  })
  const service = new HostService({
    board,
    gpus,
    localPublicIp: config.publicIp,
    runtimeOf: (hostId) => runtimeOf(hostId).where,
    pods: () => parts.pods.podStore.pods.list({}),
    addedAtRuntime: (hostId) => parts.fleet.managed.isManaged(hostId),
    drainHooks,
    movePods: (hostId, pods) => migration.moveOff(hostId, pods),
    globalNetworkOffered: (dataCenterId) =>
      fleet.dataCenters.find((dc) => dc.id === dataCenterId)?.globalNetwork ?? false,
    acceptUnenforced: config.containment.acceptUnenforced,
    driverUnenforced: (hostId) =>
      runtimeOf(hostId).driver.name === 'process' ? parts.fleet.isolation.unenforced : undefined,
    sharedVolumeStorage: (dataCenterId) => hasSharedVolumeStorage(fleet, dataCenterId),
  })
  const watch = new GpuHealthWatch({ board: gpus, store: parts.pods.podStore, clock, logger })
  const remoteGpus = new RemoteGpuSampling({
    hosts: () => fleet.hosts,
    runtimeOf,
    reportedGpus: (hostId) => board.state(hostId)?.facts?.gpus?.length ?? 0,
    onRound: (hostId, round) => void watch.onRound(hostId, round),
    logger,
    intervalMs: config.hosts.probeIntervalMs,
    timers: context.timers,
  })
  const local = fleet.hosts.find((h) => h.id === LOCAL_HOST_ID)
  let gpuSampler: GpuSampler | undefined
  if (local?.gpu && !local.simulated) {
    gpuSampler = new GpuSampler({
      logger,
      onRound: (round) => void watch.onRound(local.id, round),
      ...(config.gpus.kernelLog ? { kernelLog: config.gpus.kernelLog } : {}),
      onKernelLogProblem: (problem) => gpus.setSourceProblem(local.id, problem),
    })
    gpuSampler.start()
  }
  return { service, monitor, drainHooks, gpuSampler, remoteGpus }
}
