import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { jsonLongerThan } from './response-size.js'

describe('jsonLongerThan', () => {
  it('never says longer when the JSON text is not, and is exact without escapes', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const length = JSON.stringify(value).length
        expect(jsonLongerThan(value, length)).toBe(false)
        const plain = !/\\/.test(JSON.stringify(value))
        if (plain && length > 0) expect(jsonLongerThan(value, length - 1)).toBe(true)
      }),
    )
  })

  it('stops reading once the limit is passed', () => {
    // Items are read last first; the one read first passes the limit alone.
    const trap = {
      get value(): string {
        throw new Error('read after the limit was passed')
      },
    }
    expect(jsonLongerThan([trap, 'x'.repeat(2000)], 1000)).toBe(true)
  })
})
