import { describe, expect, it } from 'vitest'
import { formatUsd } from './format-usd.js'

describe('formatUsd', () => {
  it('prints cents, a sign only when the cents are not zero', () => {
    expect(formatUsd(12.5)).toBe('$12.50')
    expect(formatUsd(-3)).toBe('-$3.00')
    expect(formatUsd(-0.0001)).toBe('$0.00')
    expect(formatUsd(-0.006)).toBe('-$0.01')
  })
})
