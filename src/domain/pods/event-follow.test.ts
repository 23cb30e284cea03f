import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { EVENT_POLL_MS, followEvents } from './event-follow.js'
import type { PodLogLine } from './ports.js'

describe('followEvents', () => {
  it('yields new lines as they are written and leaves no listener behind per poll', async () => {
    const written: PodLogLine[] = []
    const events = {
      list: async (_id: string, query: { afterSeq?: number }) =>
        written.filter((line) => line.seq > (query.afterSeq ?? 0)),
    }
    const controller = new AbortController()
    const seen: string[] = []
    const following = (async () => {
      for await (const line of followEvents(events, 'w1', 0, controller.signal)) {
        seen.push(line.line)
      }
    })()
    written.push({ seq: 1, ts: new Date().toISOString(), line: 'started' })
    // Several polls go by.
    await new Promise((resolve) => setTimeout(resolve, EVENT_POLL_MS * 4 + 100))
    expect(seen).toEqual(['started'])
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1)
    controller.abort()
    await following
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })
})
