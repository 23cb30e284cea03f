import { describe, expect, it } from 'vitest'
import { WriteBatcher } from './write-batcher.js'

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe('WriteBatcher', () => {
  it('writes a lone item at once, on its own', async () => {
    const calls: string[] = []
    const batcher = new WriteBatcher<number, number>({
      writeOne: async (n) => {
        calls.push(`one ${n}`)
        return n * 2
      },
      writeBatch: async (ns) => {
        calls.push(`batch ${ns.join(',')}`)
        return ns.map((n) => n * 2)
      },
    })
    expect(await batcher.write(1)).toBe(2)
    expect(calls).toEqual(['one 1'])
  })

  it('groups what arrives together and while a batch is being written', async () => {
    const calls: string[] = []
    let release!: () => void
    const blocked = new Promise<void>((resolve) => {
      release = resolve
    })
    const batcher = new WriteBatcher<number, number>({
      writeOne: async (n) => {
        calls.push(`one ${n}`)
        await blocked
        return -n
      },
      writeBatch: async (ns) => {
        calls.push(`batch ${ns.join(',')}`)
        return ns.map((n) => -n)
      },
      maxBatch: 3,
    })
    const first = batcher.write(1)
    await tick()
    const rest = [2, 3, 4, 5].map((n) => batcher.write(n))
    await tick()
    expect(calls).toEqual(['one 1'])
    release()
    expect(await Promise.all([first, ...rest])).toEqual([-1, -2, -3, -4, -5])
    expect(calls).toEqual(['one 1', 'batch 2,3,4', 'one 5'])
  })

  it('retries each item of a failed batch alone, so only the bad one fails', async () => {
    const batcher = new WriteBatcher<number, string>({
      writeOne: async (n) => {
        if (n === 2) throw new Error('bad 2')
        return `ok ${n}`
      },
      writeBatch: async () => {
        throw new Error('the batch failed')
      },
    })
    const results = await Promise.allSettled([1, 2, 3].map((n) => batcher.write(n)))
    expect(results).toEqual([
      { status: 'fulfilled', value: 'ok 1' },
      { status: 'rejected', reason: new Error('bad 2') },
      { status: 'fulfilled', value: 'ok 3' },
    ])
  })
})
