import { describe, expect, it } from 'vitest'
import { newId, randomString, timeOrderedUuid } from './ids.js'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const millisecondsOf = (uuid: string) => parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16)

describe('ids', () => {
  it('makes pod ids of 14 lowercase alphanumerics like RunPod clients expect', () => {
    expect(newId.pod()).toMatch(/^[a-z0-9]{14}$/)
    expect(newId.template()).toMatch(/^[a-z0-9]{10}$/)
  })

  it('draws only from the alphabet and does not repeat', () => {
    const seen = new Set<string>()
    // 8^12 possible strings: 1000 draws collide with probability under 1e-5.
    for (let i = 0; i < 1000; i++) seen.add(randomString(12, 'abcdefgh'))
    expect([...seen].every((s) => /^[a-h]{12}$/.test(s))).toBe(true)
    expect(seen.size).toBe(1000)
  })

  it('makes job ids that are UUIDs of version 7 carrying the time they were made', () => {
    const at = Date.now()
    const id = timeOrderedUuid(at + 5_000)
    expect(id).toMatch(UUID_V7)
    expect(millisecondsOf(id)).toBe(at + 5_000)
    expect(millisecondsOf(timeOrderedUuid())).toBeGreaterThanOrEqual(at + 5_000)
  })

  it('orders ids by when they were made, within one millisecond and when the clock goes back', () => {
    // Later than any id made before in this file: the generator never goes back.
    const at = Date.now() + 60_000
    const ids: string[] = []
    // 10 000 in one millisecond overflows the 12-bit counter: the ids borrow the next ones.
    for (let i = 0; i < 10_000; i++) ids.push(timeOrderedUuid(at))
    ids.push(timeOrderedUuid(at - 1_000))
    ids.push(timeOrderedUuid(at + 10_000))
    expect(ids.every((id) => UUID_V7.test(id))).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
    expect([...ids].sort()).toEqual(ids)
    expect(millisecondsOf(ids[0]!)).toBe(at)
    expect(millisecondsOf(ids.at(-1)!)).toBe(at + 10_000)
  })
})
