import type Docker from 'dockerode'
import type { LogLine, WorkloadSpec } from '../driver.js'
import {
  pullFailureMessage,
  pullProgressLine,
  registryAuthHeader,
  withDefaultTag,
  type PullProgressEvent,
} from './image-references.js'
import { ignoring } from './engine-calls.js'

/**
 * The log of an image pull, numbered on from the workload's log; kept here while the pull runs
 * (and after it failed), then on the container it was for (PULL_LOG_LABEL).
 */
export interface PullLog {
  lines: LogLine[]
  done: boolean
  /** Wakes followers when a line arrives or the pull ends. */
  changed: Set<() => void>
}

/** One pull of an image on this engine, joined by every caller that needs the image meanwhile. */
interface SharedPull {
  done: Promise<void>
  listeners: Set<(event: PullProgressEvent) => void>
}

/** Bytes downloaded and in all, summed over the layers the engine has reported so far. */
export class PullBytes {
  private readonly layers = new Map<string, { current: number; total: number }>()

  add(event: PullProgressEvent): boolean {
    if (!event.id) return false
    const layer = this.layers.get(event.id)
    const detail = event.progressDetail
    if (event.status === 'Downloading' && detail?.total) {
      this.layers.set(event.id, { current: detail.current ?? 0, total: detail.total })
      return true
    }
    if (layer && (event.status === 'Download complete' || event.status === 'Pull complete')) {
      layer.current = layer.total
      return true
    }
    return false
  }

  get done(): number {
    let sum = 0
    for (const layer of this.layers.values()) sum += layer.current
    return sum
  }

  get total(): number {
    let sum = 0
    for (const layer of this.layers.values()) sum += layer.total
    return sum
  }
}

/** Image pulls of workloads and their logs, by workload id. */
export class ImagePulls {
  private readonly pulls = new Map<string, PullLog>()
  /** Pulls in flight by reference: a second need of the same image waits for the first pull. */
  private readonly inFlight = new Map<string, SharedPull>()

  constructor(private readonly docker: Docker) {}

  get(id: string): PullLog | undefined {
    return this.pulls.get(id)
  }

  delete(id: string): void {
    this.pulls.delete(id)
  }

  /**
   * The image's inspection; an absent image is pulled first (with the spec's credentials), its
   * progress numbered after `logEnd` and kept as the end of the workload's log until the
   * container exists, which then carries the lines returned. A failed pull throws an Error
   * whose message says why (it becomes the pod's ERROR reason) and never holds secrets.
   */
  async ensureImage(
    spec: WorkloadSpec,
    logEnd: number,
  ): Promise<{ image: Docker.ImageInspectInfo; pullLines: LogLine[] }> {
    const present = await ignoring([404], () => this.docker.getImage(spec.image).inspect())
    if (present) return { image: present, pullLines: [] }
    const pull: PullLog = { lines: [], done: false, changed: new Set() }
    this.pulls.set(spec.id, pull)
    const log = (line: string): void => {
      pull.lines.push({ seq: logEnd + pull.lines.length + 1, ts: new Date().toISOString(), line })
      for (const wake of pull.changed) wake()
    }
    const reference = withDefaultTag(spec.image)
    log(`pulling image ${reference}${spec.registryAuth ? ' with the registry credentials' : ''}`)
    const options = spec.registryAuth
      ? { authconfig: { key: registryAuthHeader(spec.image, spec.registryAuth) } }
      : {}
    try {
      await this.pullOnce(reference, options, (event) => {
        const line = pullProgressLine(event)
        if (line !== undefined) log(line)
      })
      log(`pulled image ${reference}`)
      return { image: await this.docker.getImage(spec.image).inspect(), pullLines: pull.lines }
    } catch (error) {
      const message = pullFailureMessage(spec.image, error, spec.registryAuth)
      log(message)
      throw new Error(message)
    } finally {
      pull.done = true
      for (const wake of pull.changed) wake()
    }
  }

  /**
   * Pulls the image unless the engine has it; 'present' when it had. Joins a pull of the same
   * reference in flight on this engine (a worker's start or another pull ahead of time), so an
   * engine never pulls one image twice at once. `onBytes` hears the download's progress. A
   * failed pull throws an Error whose message says why, without secrets.
   */
  async prepare(
    image: string,
    registryAuth: { username: string; password: string } | undefined,
    onBytes: (done: number, total: number) => void,
  ): Promise<'present' | 'pulled'> {
    const present = await ignoring([404], () => this.docker.getImage(image).inspect())
    if (present) return 'present'
    const options = registryAuth
      ? { authconfig: { key: registryAuthHeader(image, registryAuth) } }
      : {}
    const bytes = new PullBytes()
    try {
      await this.pullOnce(withDefaultTag(image), options, (event) => {
        if (bytes.add(event)) onBytes(bytes.done, bytes.total)
      })
    } catch (error) {
      throw new Error(pullFailureMessage(image, error, registryAuth))
    }
    return 'pulled'
  }

  /** The engine's pull of `reference`, or the one in flight, with its events as they come. */
  private pullOnce(
    reference: string,
    options: object,
    onEvent: (event: PullProgressEvent) => void,
  ): Promise<void> {
    const running = this.inFlight.get(reference)
    if (running) {
      running.listeners.add(onEvent)
      return running.done.finally(() => running.listeners.delete(onEvent))
    }
    const listeners = new Set<(event: PullProgressEvent) => void>([onEvent])
    const done = (async () => {
      const progress = await this.docker.pull(reference, options)
      await new Promise<void>((resolve, reject) => {
        this.docker.modem.followProgress(
          progress,
          (error: Error | null) => (error ? reject(error) : resolve()),
          (event: PullProgressEvent) => {
            for (const listener of listeners) listener(event)
          },
        )
      })
    })().finally(() => this.inFlight.delete(reference))
    this.inFlight.set(reference, { done, listeners })
    return done
  }
}

/** A pull's lines after `afterSeq`, as they come, until it ends or the signal aborts. */
export async function* followPull(
  pull: PullLog,
  afterSeq: number,
  signal: AbortSignal,
): AsyncIterable<LogLine> {
  let next = afterSeq
  for (;;) {
    for (const line of pull.lines) if (line.seq > next) yield line
    next = Math.max(next, pull.lines.at(-1)?.seq ?? 0)
    if (pull.done || signal.aborted) return
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        pull.changed.delete(wake)
        signal.removeEventListener('abort', wake)
        resolve()
      }
      pull.changed.add(wake)
      signal.addEventListener('abort', wake, { once: true })
    })
  }
}
