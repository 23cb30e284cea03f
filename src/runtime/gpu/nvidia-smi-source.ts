import { execFile, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

/** A long-lived nvidia-smi query under way; stop() ends it (and no exit is reported then). */
export interface FollowedQuery {
  stop(): void
}

/**
 * Where nvidia-smi runs for a host's GPU sampler (gpu-sampler.ts): a child process on this
 * machine, or a container on a remote Docker engine (docker/nvidia-smi-container.ts).
 */
export interface NvidiaSmiSource {
  /** For logs: `this machine`, `ssh://podyard@gpu-node-2`. */
  readonly where: string
  /**
   * Starts `nvidia-smi <args>` for as long as it runs: each line it prints (standard output
   * and error) goes to `onLine`, and `onExit` is told once why it ended, unless stopped.
   */
  follow(
    args: string[],
    onLine: (line: string) => void,
    onExit: (why: string) => void,
  ): FollowedQuery
  /** Runs `nvidia-smi <args>` once: its standard output, or a rejection (failure, timeout). */
  run(args: string[], timeoutMs: number): Promise<string>
}

/** nvidia-smi on this machine, as child processes (`command`, default `nvidia-smi` on PATH). */
export class LocalNvidiaSmi implements NvidiaSmiSource {
  constructor(private readonly command = 'nvidia-smi') {}

  get where(): string {
    return `this machine (${this.command})`
  }

  follow(args: string[], onLine: (line: string) => void, onExit: (why: string) => void) {
    const child = spawn(this.command, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stopped = false
    let failure: string | undefined
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', onLine)
    }
    child.on('error', (error) => (failure = `could not start ${this.command}: ${error.message}`))
    child.on('close', (code, signal) => {
      if (!stopped) onExit(failure ?? (signal ? `killed by ${signal}` : `exited with code ${code}`))
    })
    return {
      stop: () => {
        stopped = true
        child.kill('SIGTERM')
      },
    }
  }

  run(args: string[], timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) =>
      execFile(this.command, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout) =>
        error ? reject(error) : resolve(stdout),
      ),
    )
  }
}
