import { describe, expect, it } from 'vitest'
import { parseExpiry } from './parse-expiry.js'

describe('parseExpiry', () => {
  const now = new Date('2026-01-01T00:00:00.000Z')

  it('reads durations in minutes, hours and days', () => {
    expect(parseExpiry('90m', now)).toBe('2026-01-01T01:30:00.000Z')
    expect(parseExpiry('12h', now)).toBe('2026-01-01T12:00:00.000Z')
    expect(parseExpiry('30d', now)).toBe('2026-01-31T00:00:00.000Z')
  })

  it('reads ISO date-times', () => {
    expect(parseExpiry('2027-02-03T04:05:06Z', now)).toBe('2027-02-03T04:05:06.000Z')
  })

  it('rejects anything else with the flag name', () => {
    expect(() => parseExpiry('soon', now)).toThrow(/--expires/)
    expect(() => parseExpiry('30w', now)).toThrow(/--expires/)
  })
})
