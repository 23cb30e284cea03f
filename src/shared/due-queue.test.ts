import { describe, expect, it } from 'vitest'
import { DueQueue } from './due-queue.js'
import { seededRandom } from './seeded-random.js'

describe('DueQueue', () => {
  it('gives the ids due by a time, earliest first, with moved and deleted ids as they are now', () => {
    const queue = new DueQueue()
    queue.set('a', 30)
    queue.set('b', 10)
    queue.set('c', 20)
    queue.set('a', 5)
    queue.delete('c')
    expect(queue.next()).toBe(5)
    expect(queue.takeDue(15)).toEqual(['a', 'b'])
    expect(queue.next()).toBeUndefined()
    expect(queue.size).toBe(0)
  })

  it('agrees with a plain map of times over random changes', () => {
    const rand = seededRandom(5)
    const queue = new DueQueue()
    const plain = new Map<string, number>()
    for (let step = 0; step < 2000; step++) {
      const id = `p${Math.floor(rand() * 50)}`
      const r = rand()
      if (r < 0.5) {
        const at = Math.floor(rand() * 1000)
        queue.set(id, at)
        plain.set(id, at)
      } else if (r < 0.7) {
        queue.delete(id)
        plain.delete(id)
      } else {
        const now = Math.floor(rand() * 1000)
        const due = [...plain].filter(([, at]) => at <= now)
        for (const [dueId] of due) plain.delete(dueId)
        expect(queue.takeDue(now).sort()).toEqual(due.map(([dueId]) => dueId).sort())
      }
      const earliest = Math.min(...plain.values())
      expect(queue.next()).toBe(plain.size === 0 ? undefined : earliest)
      expect(queue.size).toBe(plain.size)
    }
  })
})
