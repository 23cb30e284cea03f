import { createInterface } from 'node:readline'
import type Docker from 'dockerode'
import type { FollowedQuery, NvidiaSmiSource } from '../gpu/nvidia-smi-source.js'
import { ignoring } from './engine-calls.js'

/** The label of a GPU sampler container; its value is the platform's server id. */
export const GPU_SAMPLER_LABEL = 'podyard.gpu-sampler'

export interface NvidiaSmiContainerOptions {
  serverId: string
  /** The image (gpus.probeImage): the NVIDIA toolkit mounts nvidia-smi into it. */
  image: string
  /** Where the engine is, for logs. */
  where: string
  /**
   * The engine's runtime that gives the container the GPUs: `nvidia` by default; null, the
   * engine's default runtime (tests, with a stand-in nvidia-smi in the image).
   */
  runtime?: string | null
}

/**
 * nvidia-smi on a remote Docker engine's machine (docs/gpus.md, "GPUs through Docker"): the
 * long-lived query runs as the command of one container per engine with the `nvidia` runtime
 * and every GPU (NVIDIA_VISIBLE_DEVICES=all, capability `utility`: nvidia-smi only, no CUDA),
 * no network, its output read through the engine's attach stream; a one-off query is an exec
 * in that container. A container left by an earlier sampler (a crashed server) is replaced.
 */
export class NvidiaSmiContainer implements NvidiaSmiSource {
  private current: Docker.Container | undefined

  constructor(
    private readonly docker: Docker,
    private readonly options: NvidiaSmiContainerOptions,
  ) {}

  get where(): string {
    return this.options.where
  }

  private get name(): string {
    return `podyard-gpu-sampler-${this.options.serverId}`
  }

  follow(args: string[], onLine: (line: string) => void, onExit: (why: string) => void) {
    let stopped = false
    let container: Docker.Container | undefined
    const run = async (): Promise<string> => {
      await ignoring([404], () => this.docker.getContainer(this.name).remove({ force: true }))
      container = await this.docker.createContainer({
        name: this.name,
        Image: this.options.image,
        Entrypoint: ['nvidia-smi'],
        Cmd: args,
        Tty: true,
        Env: ['NVIDIA_VISIBLE_DEVICES=all', 'NVIDIA_DRIVER_CAPABILITIES=utility'],
        Labels: { [GPU_SAMPLER_LABEL]: this.options.serverId },
        HostConfig: {
          NetworkMode: 'none',
          ...(this.options.runtime === null ? {} : { Runtime: this.options.runtime ?? 'nvidia' }),
        },
      })
      if (stopped) return 'stopped'
      // Attached before it starts: no line is missed. A TTY merges both streams, lines end in CR LF.
      const output = (await container.attach({
        stream: true,
        stdout: true,
        stderr: true,
      })) as unknown as NodeJS.ReadableStream
      createInterface({ input: output, crlfDelay: Infinity }).on('line', (line) =>
        onLine(line.replace(/\r$/, '')),
      )
      await container.start()
      this.current = container
      const { StatusCode } = (await container.wait()) as { StatusCode: number }
      return `exited with code ${StatusCode}`
    }
    run().then(
      (why) => end(why),
      (error: Error) => end(error.message.trim()),
    )
    const end = (why: string) => {
      if (this.current === container) this.current = undefined
      void container?.remove({ force: true }).catch(() => undefined)
      if (!stopped) onExit(`the sampler container on ${this.where}: ${why}`)
    }
    const query: FollowedQuery = {
      stop: () => {
        stopped = true
        void container?.remove({ force: true }).catch(() => undefined)
      },
    }
    return query
  }

  async run(args: string[], timeoutMs: number): Promise<string> {
    const container = this.current
    if (!container) throw new Error(`no sampler container runs on ${this.where}`)
    const exec = await container.exec({
      Cmd: ['nvidia-smi', ...args],
      AttachStdout: true,
      AttachStderr: true,
      Tty: true,
    })
    const stream = (await exec.start({
      hijack: true,
      stdin: false,
      Tty: true,
    })) as unknown as NodeJS.ReadableStream
    let output = ''
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
      stream.on('end', resolve)
      stream.on('error', reject)
    })
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
    })
    try {
      await Promise.race([ended, timeout])
    } finally {
      clearTimeout(timer)
    }
    const { ExitCode } = await exec.inspect()
    if (ExitCode !== 0) throw new Error(`nvidia-smi ${args[0] ?? ''} exited with code ${ExitCode}`)
    return output.replace(/\r\n/g, '\n')
  }
}
