import { randomUUID } from 'node:crypto'
import type { Pod, PodRuntime } from '../../domain/pods/pod.js'

/** What an answer's live parts are made of; everything else comes from the stored pod. */
export interface PodAnswerParts {
  pod: Pod
  runtime: PodRuntime | null
  cudaVersion: string | null
}

/** Stand-ins for the live fields while the rest is serialized: no stored string can equal them. */
const SSH_MARK = `\u0000ssh-${randomUUID()}`
const RUNTIME_MARK = `\u0000runtime-${randomUUID()}`
const SSH_TEXT = JSON.stringify(SSH_MARK)
const RUNTIME_TEXT = JSON.stringify(RUNTIME_MARK)

interface Entry {
  version: number
  status: string
  hostId: string | null
  cudaVersion: string | null
  /** The JSON text before `ssh`'s value, between it and `runtime`'s, and after. */
  head: string
  middle: string
  tail: string
}

/**
 * A pod's REST answer as JSON text, the same text `JSON.stringify(view(...))` makes, with the
 * parts that depend only on the stored pod kept per pod between reads: a pod's `version` moves
 * with every write of it (the store's updates are conditional on it), so a read of an unchanged
 * pod serializes only its live parts (`ssh` and `runtime`: the uptime moves every second).
 * Serializing the whole view and building it were about a tenth of a read's CPU
 * (bench/README.md, "Profile notes"). Bounded: the oldest entry goes first.
 */
export class PodAnswerText {
  private readonly entries = new Map<string, Entry>()

  constructor(
    private readonly view: (
      parts: PodAnswerParts,
      live: { ssh: unknown; runtime: unknown },
    ) => Record<string, unknown>,
    private readonly sshOf: (pod: Pod, runtime: PodRuntime | null) => unknown,
    private readonly maxEntries = 10_000,
  ) {}

  text(parts: PodAnswerParts): string {
    const { pod, cudaVersion } = parts
    let entry = this.entries.get(pod.id)
    if (
      entry === undefined ||
      entry.version !== pod.version ||
      entry.status !== pod.status ||
      entry.hostId !== pod.hostId ||
      entry.cudaVersion !== cudaVersion
    ) {
      entry = this.entryOf(parts)
      this.entries.delete(pod.id)
      if (this.entries.size >= this.maxEntries) {
        this.entries.delete(this.entries.keys().next().value!)
      }
      if (entry) this.entries.set(pod.id, entry)
    }
    if (!entry) {
      const live = { ssh: this.sshOf(pod, parts.runtime), runtime: parts.runtime }
      return JSON.stringify(this.view(parts, live))
    }
    return (
      entry.head +
      JSON.stringify(this.sshOf(pod, parts.runtime)) +
      entry.middle +
      JSON.stringify(parts.runtime) +
      entry.tail
    )
  }

  /** Undefined when the view does not place each stand-in once, in order (then no caching). */
  private entryOf({ pod, cudaVersion, ...rest }: PodAnswerParts): Entry | undefined {
    const text = JSON.stringify(
      this.view({ pod, cudaVersion, ...rest }, { ssh: SSH_MARK, runtime: RUNTIME_MARK }),
    )
    const ssh = text.indexOf(SSH_TEXT)
    const runtime = text.indexOf(RUNTIME_TEXT)
    if (
      ssh < 0 ||
      runtime < ssh ||
      text.indexOf(SSH_TEXT, ssh + 1) >= 0 ||
      text.indexOf(RUNTIME_TEXT, runtime + 1) >= 0
    ) {
      return undefined
    }
    return {
      version: pod.version,
      status: pod.status,
      hostId: pod.hostId,
      cudaVersion,
      head: text.slice(0, ssh),
      middle: text.slice(ssh + SSH_TEXT.length, runtime),
      tail: text.slice(runtime + RUNTIME_TEXT.length),
    }
  }
}
