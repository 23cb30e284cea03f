import { describe, expect, it } from 'vitest'
import { formatTraceparent, parseTraceparent, requestSpan } from './trace-context.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN = '00f067aa0ba902b7'

describe('W3C traceparent', () => {
  it('reads a valid header', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      flags: '01',
    })
  })

  it('refuses what the recommendation says to treat as absent', () => {
    for (const bad of [
      '',
      'garbage',
      `ff-${TRACE}-${SPAN}-01`,
      `00-${'0'.repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-01-extra`,
      `00-${TRACE.slice(1)}-${SPAN}-01`,
    ]) {
      expect(parseTraceparent(bad), bad).toBeUndefined()
    }
  })

  it('reads the known fields of a later version and ignores the rest', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-00-later`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      flags: '00',
    })
  })

  it("continues the caller's trace with a new span, or starts a sampled one", () => {
    const child = requestSpan(`00-${TRACE}-${SPAN}-00`)
    expect(child.traceId).toBe(TRACE)
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(child.spanId).not.toBe(SPAN)
    expect(child.flags).toBe('00')
    const root = requestSpan('nonsense')
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(root.flags).toBe('01')
    expect(parseTraceparent(formatTraceparent(root))).toEqual(root)
  })
})
