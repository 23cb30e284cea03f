import type Docker from 'dockerode'
import {
  GPU_DETAIL_QUERY_ARGS,
  parseSmiCudaVersion,
  parseSmiGpuDetails,
  type SmiGpuDetail,
} from '../host-discovery.js'

/**
 * The image of the GPU probe container. The NVIDIA container toolkit mounts nvidia-smi and the
 * driver's libraries into any container run with the `nvidia` runtime (capability `utility`),
 * so any image with a C library and a shell will do; this one is small and common.
 */
export const DEFAULT_GPU_PROBE_IMAGE = 'ubuntu:24.04'
/** The GPUs of a machine change only when someone opens it: read again this often. */
export const GPU_PROBE_INTERVAL_MS = 5 * 60_000
/** After a failed read, the next try comes sooner. */
const GPU_PROBE_RETRY_MS = 30_000
/** A pull of the probe image on a slow link, and the container's run. */
const GPU_PROBE_TIMEOUT_MS = 180_000
/** Marks probe containers (never a workload's); the value is the server id. */
export const GPU_PROBE_LABEL = 'podyard.gpu-probe'

/** What a read found: the GPUs and the driver's CUDA version, or why they could not be read. */
export type EngineGpus =
  { gpus: SmiGpuDetail[]; cudaVersion: string | null } | { gpuProbeError: string }

const SCRIPT =
  `nvidia-smi ${GPU_DETAIL_QUERY_ARGS.join(' ')} || exit 1; ` +
  // The banner's "CUDA Version: 12.4" is the driver's; the query has no field for it.
  "nvidia-smi | grep -m1 'CUDA Version' || true"

/** Parses the probe container's output (SCRIPT's). */
export function engineGpusOf(output: string, exitCode: number): EngineGpus {
  const gpus = parseSmiGpuDetails(output)
  if (exitCode !== 0 || gpus.length === 0) {
    const said = output.trim().split('\n')[0]?.trim()
    return {
      gpuProbeError: `nvidia-smi in a probe container exited ${exitCode}${said ? `: ${said}` : ''}`,
    }
  }
  return { gpus, cudaVersion: parseSmiCudaVersion(output) }
}

/**
 * Reads an engine's NVIDIA GPUs through a short-lived container with the `nvidia` runtime
 * (nvidia-smi in it sees every GPU of the machine: NVIDIA_VISIBLE_DEVICES=all), in the
 * background: a host probe must answer within seconds, and a first pull of the image can take
 * a minute. Until the first read ends, the host's GPUs are "not read yet" and not offered.
 */
export class EngineGpuProbe {
  private last: EngineGpus | undefined
  private lastAt = 0
  private running: Promise<void> | undefined

  /**
   * @param known the GPUs when they are known without a container: the engine of this machine,
   *   whose GPUs nvidia-smi listed at start (host-discovery.ts); no container is run then
   */
  constructor(
    private readonly docker: Docker,
    private readonly serverId: string,
    private readonly image: string = DEFAULT_GPU_PROBE_IMAGE,
    private readonly now: () => number = Date.now,
    known?: { gpus: SmiGpuDetail[]; cudaVersion: string | null },
  ) {
    if (known) {
      this.last = known
      this.lastAt = Number.POSITIVE_INFINITY
    }
  }

  /** The last read (a new one started when it is due), or why there is none yet. */
  current(): EngineGpus {
    const age = this.now() - this.lastAt
    const due =
      this.last === undefined ||
      age >= ('gpus' in this.last ? GPU_PROBE_INTERVAL_MS : GPU_PROBE_RETRY_MS)
    if (due && !this.running) {
      this.running = this.read()
        .then((read) => {
          this.last = read
        })
        .finally(() => {
          this.lastAt = this.now()
          this.running = undefined
        })
    }
    return this.last ?? { gpuProbeError: 'not read yet: a probe container is starting' }
  }

  /** UUIDs by GPU index from the last good read (DeviceIDs of GPU workloads). */
  uuids(): readonly string[] | undefined {
    if (!this.last || !('gpus' in this.last)) return undefined
    const out: string[] = []
    for (const gpu of this.last.gpus) out[gpu.index] = gpu.uuid
    return out
  }

  private async read(): Promise<EngineGpus> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<EngineGpus>((resolve) => {
      timer = setTimeout(
        () => resolve({ gpuProbeError: `no answer within ${GPU_PROBE_TIMEOUT_MS / 1000} s` }),
        GPU_PROBE_TIMEOUT_MS,
      )
    })
    try {
      return await Promise.race([this.run(), timeout])
    } catch (error) {
      return { gpuProbeError: (error as Error).message.split('\n')[0] ?? 'failed' }
    } finally {
      clearTimeout(timer)
    }
  }

  private async run(): Promise<EngineGpus> {
    await this.ensureImage()
    const container = await this.docker.createContainer({
      Image: this.image,
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: [SCRIPT],
      Tty: true,
      Env: ['NVIDIA_VISIBLE_DEVICES=all', 'NVIDIA_DRIVER_CAPABILITIES=utility'],
      Labels: { [GPU_PROBE_LABEL]: this.serverId },
      HostConfig: { Runtime: 'nvidia', NetworkMode: 'none' },
    })
    try {
      await container.start()
      const { StatusCode } = (await container.wait()) as { StatusCode: number }
      const output = (await container.logs({ stdout: true, stderr: true })).toString('utf8')
      return engineGpusOf(output, StatusCode)
    } finally {
      await container.remove({ force: true }).catch(() => undefined)
    }
  }

  private async ensureImage(): Promise<void> {
    try {
      await this.docker.getImage(this.image).inspect()
      return
    } catch {
      // Not there: pulled below.
    }
    const stream = await this.docker.pull(this.image)
    await new Promise<void>((resolve, reject) =>
      this.docker.modem.followProgress(stream, (error: Error | null) =>
        error ? reject(error) : resolve(),
      ),
    )
  }
}
