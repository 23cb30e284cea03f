interface Entry {
  at: number
  id: string
}

/**
 * Ids each due at a time, the earliest found at once (a binary heap; an id set again or
 * deleted leaves a stale entry behind, skipped when it comes up). For loops that must wake for
 * the next thing due among many, without looking at all of them.
 */
export class DueQueue {
  private readonly dueAt = new Map<string, number>()
  private readonly heap: Entry[] = []

  get size(): number {
    return this.dueAt.size
  }

  /** Sets (or moves) the id's time. */
  set(id: string, at: number): void {
    this.dueAt.set(id, at)
    this.heap.push({ at, id })
    this.up(this.heap.length - 1)
  }

  delete(id: string): void {
    this.dueAt.delete(id)
  }

  clear(): void {
    this.dueAt.clear()
    this.heap.length = 0
  }

  /** The earliest time any id is due, or undefined when none is. */
  next(): number | undefined {
    this.dropStale()
    return this.heap[0]?.at
  }

  /** Takes out the ids due at or before `now`, earliest first. */
  takeDue(now: number): string[] {
    const out: string[] = []
    for (;;) {
      this.dropStale()
      const top = this.heap[0]
      if (!top || top.at > now) return out
      this.pop()
      this.dueAt.delete(top.id)
      out.push(top.id)
    }
  }

  private dropStale(): void {
    while (this.heap.length > 0 && this.dueAt.get(this.heap[0]!.id) !== this.heap[0]!.at) this.pop()
  }

  private pop(): void {
    const last = this.heap.pop()!
    if (this.heap.length === 0) return
    this.heap[0] = last
    this.down(0)
  }

  private up(index: number): void {
    const heap = this.heap
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (heap[parent]!.at <= heap[index]!.at) return
      ;[heap[parent], heap[index]] = [heap[index]!, heap[parent]!]
      index = parent
    }
  }

  private down(index: number): void {
    const heap = this.heap
    for (;;) {
      const left = index * 2 + 1
      const right = left + 1
      let smallest = index
      if (left < heap.length && heap[left]!.at < heap[smallest]!.at) smallest = left
      if (right < heap.length && heap[right]!.at < heap[smallest]!.at) smallest = right
      if (smallest === index) return
      ;[heap[smallest], heap[index]] = [heap[index]!, heap[smallest]!]
      index = smallest
    }
  }
}
