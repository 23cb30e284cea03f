import { describe, expect, it } from 'vitest'
import { newId, randomString } from './ids.js'

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
})
