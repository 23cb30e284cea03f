import { describe, expect, it } from 'vitest'
import { NetworkUse } from './network-use.js'

describe('NetworkUse', () => {
  it('leaves a network alone while a start on it is under way', async () => {
    const use = new NetworkUse()
    let release!: () => void
    const starting = use.whileStarting('tenant-a', () => new Promise<void>((r) => (release = r)))
    let removed = false
    await use.removeUnlessStarting('tenant-a', async () => {
      removed = true
    })
    expect(removed).toBe(false)
    release()
    await starting
    await use.removeUnlessStarting('tenant-a', async () => {
      removed = true
    })
    expect(removed).toBe(true)
  })

  it('starts only after a removal under way has ended, so the start makes the network again', async () => {
    const use = new NetworkUse()
    const events: string[] = []
    let finishRemoval!: () => void
    const removal = use.removeUnlessStarting('tenant-a', async () => {
      events.push('removal began')
      await new Promise<void>((r) => (finishRemoval = r))
      events.push('removal ended')
    })
    const start = use.whileStarting('tenant-a', async () => {
      events.push('start')
    })
    await Promise.resolve()
    finishRemoval()
    await Promise.all([removal, start])
    expect(events).toEqual(['removal began', 'removal ended', 'start'])
  })

  it('keeps networks of other tenants apart', async () => {
    const use = new NetworkUse()
    let release!: () => void
    const starting = use.whileStarting('tenant-a', () => new Promise<void>((r) => (release = r)))
    let removed = false
    await use.removeUnlessStarting('tenant-b', async () => {
      removed = true
    })
    expect(removed).toBe(true)
    release()
    await starting
  })
})
