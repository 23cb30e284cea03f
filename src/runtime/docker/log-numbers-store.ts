import { ContainerLogNumbers, type LogNumbersJson } from './log-numbering.js'

/**
 * Where a container's numbers are kept beyond this server's memory: the store's
 * container_log_numbers table (store/container-log-numbers-repo.ts), one JSON text per
 * container, read and written by every replica.
 */
export interface LogNumbersKeeping {
  read(containerId: string): Promise<string | undefined>
  write(containerId: string, numbers: string): Promise<void>
  remove(containerId: string): Promise<void>
}

/**
 * Where each container's log numbers fall (log-numbering.ts), kept per container in memory
 * and, with a keeping, in the store (every 1024th line and the newest one numbered when the
 * last anchor was added), so that another replica, or a server started again, numbers a log
 * Docker rotated meanwhile as this one did. Each read of a log first takes in what the other
 * replicas kept since (numbersOf). Without a keeping (the driver's own tests), memory only.
 */
export class LogNumbersStore {
  private readonly loaded = new Map<string, Promise<ContainerLogNumbers>>()
  /** Saves under way, and whether another is wanted after it. */
  private readonly saving = new Map<string, { done: Promise<void>; again: boolean }>()

  constructor(private readonly keeping: LogNumbersKeeping | undefined) {}

  /** The container's numbers, with what other replicas numbered since the last read taken in. */
  async numbersOf(containerId: string): Promise<ContainerLogNumbers> {
    const loaded = this.loaded.get(containerId)
    if (!loaded) {
      const numbers = this.load(containerId)
      this.loaded.set(containerId, numbers)
      return numbers
    }
    const [numbers, kept] = await Promise.all([loaded, this.read(containerId)])
    if (kept) numbers.takeIn(kept)
    return numbers
  }

  /** Writes the container's numbers (one write at a time per container, the last one wins). */
  save(containerId: string): void {
    if (!this.keeps(containerId)) return
    const under = this.saving.get(containerId)
    if (under) {
      under.again = true
      return
    }
    const entry = { done: Promise.resolve(), again: false }
    entry.done = (async () => {
      do {
        entry.again = false
        const numbers = await this.loaded.get(containerId)
        if (!numbers) return
        await this.keeping!.write(containerId, JSON.stringify(numbers.toJson())).catch(
          () => undefined,
        )
      } while (entry.again)
    })().finally(() => this.saving.delete(containerId))
    this.saving.set(containerId, entry)
  }

  /** A removed container's numbers go. */
  async forget(containerId: string): Promise<void> {
    this.loaded.delete(containerId)
    await this.saving.get(containerId)?.done
    if (this.keeps(containerId)) await this.keeping!.remove(containerId).catch(() => undefined)
  }

  /** Waits for the saves under way (a closing driver). */
  async flush(): Promise<void> {
    await Promise.all([...this.saving.values()].map((entry) => entry.done))
  }

  private async load(containerId: string): Promise<ContainerLogNumbers> {
    const numbers = new ContainerLogNumbers()
    const kept = await this.read(containerId)
    if (kept) numbers.takeIn(kept)
    numbers.onAnchor = () => this.save(containerId)
    return numbers
  }

  /** What the store keeps of the container; undefined when nothing, or nothing readable. */
  private async read(containerId: string): Promise<LogNumbersJson | undefined> {
    if (!this.keeps(containerId)) return undefined
    try {
      const text = await this.keeping!.read(containerId)
      return text === undefined ? undefined : (JSON.parse(text) as LogNumbersJson)
    } catch {
      // Unreadable (or the store away): numbered from what this server knows, as a first read.
      return undefined
    }
  }

  /** Whether the container's numbers are kept: with a keeping, for an engine's ids alone. */
  private keeps(containerId: string): boolean {
    return this.keeping !== undefined && /^[a-f0-9]{12,64}$/.test(containerId)
  }
}
