import { inflateSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { crc32, PNG_SIGNATURE, renderPromptPng, wrapText } from './prompt-image.js'
import { generateReferenceText } from './reference-text.js'

describe('the reference image renderer', () => {
  it('writes a valid PNG of the asked size, the same bytes for the same input', () => {
    const png = renderPromptPng('A lighthouse at dusk', 136, 64)
    expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE)
    expect(png.subarray(12, 16).toString()).toBe('IHDR')
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([136, 64])
    // The IHDR CRC covers its type and data.
    expect(png.readUInt32BE(29)).toBe(crc32(png.subarray(12, 29)))
    const idatLength = png.readUInt32BE(33)
    const raw = inflateSync(png.subarray(41, 41 + idatLength))
    expect(raw.length).toBe((136 * 3 + 1) * 64)
    expect(renderPromptPng('A lighthouse at dusk', 136, 64)).toEqual(png)
    expect(renderPromptPng('A lighthouse at dawn', 136, 64)).not.toEqual(png)
  })

  it('wraps words and cuts the ones longer than a line', () => {
    expect(wrapText('the quick brown fox', 9)).toEqual(['the quick', 'brown fox'])
    expect(wrapText('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij'])
  })
})

describe('the reference text generator', () => {
  it('answers the same conversation the same way, within max_tokens', () => {
    const messages = [{ role: 'user' as const, content: 'hello there' }]
    const first = generateReferenceText(messages, 256)
    expect(generateReferenceText(messages, 256)).toEqual(first)
    expect(first.usage.prompt_tokens).toBe(3)
    const short = generateReferenceText(messages, 5)
    expect(short).toMatchObject({ finish_reason: 'length', usage: { completion_tokens: 5 } })
  })
})
