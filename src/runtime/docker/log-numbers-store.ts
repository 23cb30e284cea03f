import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { ContainerLogNumbers, type LogNumbersJson } from './log-numbering.js'

/**
 * Where each container's log numbers fall (log-numbering.ts), kept per container in memory
 * and, with a directory, in a small file there (`<containerId>.json`: every 1024th line and
 * the newest one numbered), so that a server started again numbers a log Docker rotated
 * meanwhile as before. Without a directory (the driver's own tests), memory only.
 */
export class LogNumbersStore {
  private readonly loaded = new Map<string, Promise<ContainerLogNumbers>>()
  /** Saves under way, and whether another is wanted after it. */
  private readonly saving = new Map<string, { done: Promise<void>; again: boolean }>()

  constructor(private readonly dir: string | undefined) {}

  numbersOf(containerId: string): Promise<ContainerLogNumbers> {
    let numbers = this.loaded.get(containerId)
    if (!numbers) {
      numbers = this.load(containerId)
      this.loaded.set(containerId, numbers)
    }
    return numbers
  }

  /** Writes the container's numbers (one write at a time per container, the last one wins). */
  save(containerId: string): void {
    if (!this.fileOf(containerId)) return
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
        await this.write(containerId, numbers).catch(() => undefined)
      } while (entry.again)
    })().finally(() => this.saving.delete(containerId))
    this.saving.set(containerId, entry)
  }

  /** A removed container's numbers go. */
  async forget(containerId: string): Promise<void> {
    this.loaded.delete(containerId)
    await this.saving.get(containerId)?.done
    const file = this.fileOf(containerId)
    if (file) await rm(file, { force: true })
  }

  /** Waits for the saves under way (a closing driver). */
  async flush(): Promise<void> {
    await Promise.all([...this.saving.values()].map((entry) => entry.done))
  }

  private async load(containerId: string): Promise<ContainerLogNumbers> {
    let numbers = new ContainerLogNumbers()
    const file = this.fileOf(containerId)
    if (file) {
      try {
        numbers = ContainerLogNumbers.fromJson(
          JSON.parse(await readFile(file, 'utf8')) as LogNumbersJson,
        )
      } catch {
        // None yet, or unreadable: numbered from the oldest line kept, as a first read does.
      }
    }
    numbers.onAnchor = () => this.save(containerId)
    return numbers
  }

  private async write(containerId: string, numbers: ContainerLogNumbers): Promise<void> {
    const file = this.fileOf(containerId)
    if (!file) return
    await mkdir(path.dirname(file), { recursive: true })
    await writeFile(`${file}.tmp`, JSON.stringify(numbers.toJson()))
    await rename(`${file}.tmp`, file)
  }

  /** The container's file; none without a directory, or for what is not an engine's id. */
  private fileOf(containerId: string): string | undefined {
    if (!this.dir || !/^[a-f0-9]{12,64}$/.test(containerId)) return undefined
    return path.join(this.dir, `${containerId}.json`)
  }
}
