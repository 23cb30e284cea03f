import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { cutDeepJson, jsonDeeperThan, MAX_JSON_DEPTH } from './json-depth.js'

const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth)

/** The depth by the definition, recursively (fine for the small values generated here). */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf))
  if (typeof value === 'object' && value !== null) {
    return 1 + Math.max(0, ...Object.values(value).map(depthOf))
  }
  return 0
}

describe('jsonDeeperThan', () => {
  it('is true one level past the bound and false at it', () => {
    expect(MAX_JSON_DEPTH).toBe(256)
    expect(jsonDeeperThan(nested(256))).toBe(false)
    expect(jsonDeeperThan(nested(257))).toBe(true)
    expect(jsonDeeperThan(`{"a":${nested(255)}}`)).toBe(false)
    expect(jsonDeeperThan(`{"a":${nested(256)}}`)).toBe(true)
  })

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ s: `\\"${'['.repeat(1000)}`, t: '{'.repeat(1000) })
    expect(jsonDeeperThan(text, 1)).toBe(false)
    expect(jsonDeeperThan(text, 0)).toBe(true)
  })

  it('scans 100 000 levels without recursion', () => {
    expect(jsonDeeperThan(nested(100_000))).toBe(true)
  })

  it('agrees with a recursive walk on any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 14 }), (v, max) => {
        const text = JSON.stringify(v)
        expect(jsonDeeperThan(text, max)).toBe(depthOf(v) > max)
      }),
    )
  })
})

describe('cutDeepJson', () => {
  it('leaves JSON within the bound as it is', () => {
    const text = JSON.stringify([{ id: 'a', output: [1, [2]] }])
    expect(cutDeepJson(text, 4)).toEqual({ text, cutItems: [], cut: false })
  })

  it('replaces what opens past the bound by null and names the root items it cut', () => {
    const text = JSON.stringify([
      { id: 'a', output: 1 },
      { id: 'b', output: [[['x', '],[']]] },
      { id: 'c', output: [2] },
      { id: 'd', output: [[[3]], [[4]]] },
    ])
    const cut = cutDeepJson(text, 3)
    expect(cut.cut).toBe(true)
    expect(cut.cutItems).toEqual([1, 3])
    expect(JSON.parse(cut.text)).toEqual([
      { id: 'a', output: 1 },
      { id: 'b', output: [null] },
      { id: 'c', output: [2] },
      { id: 'd', output: [null, null] },
    ])
  })

  it('cuts a value 100 000 levels deep into one that parses', () => {
    const cut = cutDeepJson(`{"id":"j","output":${nested(100_000)}}`)
    expect(cut.cut).toBe(true)
    expect(cut.cutItems).toEqual([])
    const parsed = JSON.parse(cut.text) as { id: string }
    expect(parsed.id).toBe('j')
    expect(jsonDeeperThan(cut.text)).toBe(false)
  })

  it('never leaves anything deeper than the bound', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 10 }), fc.integer({ min: 1, max: 8 }), (v, max) => {
        const cut = cutDeepJson(JSON.stringify(v), max)
        expect(depthOf(JSON.parse(cut.text))).toBeLessThanOrEqual(max)
        expect(cut.cut).toBe(depthOf(v) > max)
      }),
    )
  })
})
