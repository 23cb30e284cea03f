import { Gauge, type Registry } from 'prom-client'
import type { GpuMetricsSnapshot } from '../../domain/hosts/host-service.js'

/** Which reading each per-GPU gauge reports; a GPU without the reading has no series. */
const READINGS = [
  [
    'podyard_gpu_utilization_percent',
    'Percent of the last sample period a kernel ran on the GPU',
    'utilPercent',
  ],
  ['podyard_gpu_memory_used_percent', "Percent of the GPU's memory in use", 'memoryUsedPercent'],
  ['podyard_gpu_memory_used_mib', "The GPU's memory in use, MiB", 'memoryUsedMib'],
  ['podyard_gpu_temperature_celsius', "The GPU's temperature", 'temperatureC'],
  ['podyard_gpu_power_watts', "The GPU's power draw", 'powerDrawW'],
] as const

/**
 * Per-GPU gauges labelled host, index and type (bounded by the fleet's GPUs), its health, and
 * `podyard_gpu_assigned{host,index,pod}` = 1 for each GPU a live pod holds: the pod id lives on
 * that one metric, so that pods coming and going do not multiply every gauge's series.
 */
export function installGpuMetrics(
  registry: Registry,
  source: { gpuMetrics(): Promise<GpuMetricsSnapshot> },
): void {
  // One read per scrape, shared by the gauges collected in it.
  let pending: Promise<GpuMetricsSnapshot> | undefined
  const snapshot = () => {
    pending ??= source.gpuMetrics().finally(() => setTimeout(() => (pending = undefined), 0))
    return pending
  }
  const labels = ['host', 'index', 'type'] as const
  for (const [name, help, field] of READINGS) {
    new Gauge({
      name,
      help,
      labelNames: labels,
      registers: [registry],
      async collect() {
        this.reset()
        for (const gpu of (await snapshot()).gpus) {
          const value = gpu[field]
          if (value !== null)
            this.set({ host: gpu.hostId, index: String(gpu.index), type: gpu.type }, value)
        }
      },
    })
  }
  new Gauge({
    name: 'podyard_gpu_healthy',
    help: '1 while the GPU takes pods; 0 once withdrawn for its health (podyard hosts gpu-reset)',
    labelNames: labels,
    registers: [registry],
    async collect() {
      this.reset()
      for (const gpu of (await snapshot()).gpus)
        this.set(
          { host: gpu.hostId, index: String(gpu.index), type: gpu.type },
          gpu.health === 'HEALTHY' ? 1 : 0,
        )
    },
  })
  new Gauge({
    name: 'podyard_gpu_assigned',
    help: 'The pod that holds the GPU (1 per assignment)',
    labelNames: ['host', 'index', 'pod'] as const,
    registers: [registry],
    async collect() {
      this.reset()
      for (const a of (await snapshot()).assigned)
        this.set({ host: a.hostId, index: String(a.index), pod: a.podId }, 1)
    },
  })
}
