import { describe, expect, it } from 'vitest'
import {
  DEFAULT_IMAGE_SIDE,
  finalPriceNano,
  isValidModelId,
  MAX_IMAGE_SIDE,
  MAX_MAX_TOKENS,
  maxPriceNano,
  MIN_IMAGE_SIDE,
  validateModelInput,
} from './model.js'

const image = (input: Record<string, unknown>) => validateModelInput('image', input)

describe('model input', () => {
  it('accepts image sides at each bound and fills the default size', () => {
    expect(image({ prompt: 'p', width: MIN_IMAGE_SIDE, height: MAX_IMAGE_SIDE })).toEqual({
      ok: true,
      input: { kind: 'image', prompt: 'p', width: 64, height: 2048 },
    })
    expect(image({ prompt: 'p' })).toMatchObject({
      input: { width: DEFAULT_IMAGE_SIDE, height: DEFAULT_IMAGE_SIDE },
    })
  })

  it('names every failing field', () => {
    expect(image({ width: 56, height: 2056, seed: -2 })).toEqual({
      ok: false,
      problems: [
        'input.prompt: required',
        'input.width: must be between 64 and 2048, got 56',
        'input.height: must be between 64 and 2048, got 2056',
        'input.seed: must be a non-negative integer, or -1 for a random one',
      ],
    })
    expect(image({ prompt: ' ', width: 65 })).toEqual({
      ok: false,
      problems: ['input.prompt: must not be empty', 'input.width: must be a multiple of 8, got 65'],
    })
    expect(validateModelInput('image', [])).toEqual({
      ok: false,
      problems: ['input: must be a JSON object'],
    })
  })

  it('takes what SDKs send by default: seed -1 is random, size sets width and height', () => {
    expect(validateModelInput('image', { prompt: 'p', seed: -1 }, () => 1234)).toEqual({
      ok: true,
      input: { kind: 'image', prompt: 'p', width: 512, height: 512, seed: 1234 },
    })
    for (const size of ['768*512', '768x512', ' 768 * 512 ']) {
      expect(image({ prompt: 'p', size })).toMatchObject({ input: { width: 768, height: 512 } })
    }
    expect(image({ prompt: 'p', size: '768*512', width: 768 })).toMatchObject({ ok: true })
    // The AI SDK provider's default size beside the caller's own sides: the sides win.
    expect(image({ prompt: 'p', size: '1328*1328', width: 640, height: 448 })).toMatchObject({
      ok: true,
      input: { width: 640, height: 448 },
    })
    expect(image({ prompt: 'p', size: '768*512', width: 640 })).toMatchObject({
      ok: true,
      input: { width: 640, height: 512 },
    })
    expect(image({ prompt: 'p', size: 'big' })).toEqual({
      ok: false,
      problems: [
        'input.size: must be <width>*<height> (or <width>x<height>), e.g. 1024*768, got "big"',
      ],
    })
    expect(image({ prompt: 'p', size: '4096*100' })).toEqual({
      ok: false,
      problems: [
        'input.size: must be between 64 and 2048, got 4096',
        'input.size: must be a multiple of 8, got 100',
      ],
    })
  })

  it('takes text as a prompt or messages, with max_tokens bounds', () => {
    expect(validateModelInput('text', { prompt: 'hi' })).toEqual({
      ok: true,
      input: { kind: 'text', messages: [{ role: 'user', content: 'hi' }], max_tokens: 256 },
    })
    expect(validateModelInput('text', { prompt: 'hi', max_tokens: MAX_MAX_TOKENS })).toMatchObject({
      ok: true,
    })
    expect(
      validateModelInput('text', { prompt: 'hi', max_tokens: MAX_MAX_TOKENS + 1 }),
    ).toMatchObject({
      ok: false,
    })
    expect(validateModelInput('text', {})).toEqual({
      ok: false,
      problems: ['input.prompt: required (or give input.messages)'],
    })
    expect(validateModelInput('text', { messages: [{ role: 'robot', content: 'x' }] })).toEqual({
      ok: false,
      problems: ['input.messages[0]: must be {role: system|user|assistant, content: string}'],
    })
  })
})

describe('model prices', () => {
  it('prices images per megapixel, rounded up to a nano-dollar', () => {
    const price = { unit: 'megapixel' as const, usd: 0.0024 }
    const input = { kind: 'image' as const, prompt: 'p', width: 1000, height: 1000 }
    expect(maxPriceNano(price, input)).toBe(2_400_000)
    expect(maxPriceNano(price, { ...input, width: 512, height: 512 })).toBe(629_146)
    expect(finalPriceNano(price, input, undefined)).toBe(2_400_000)
  })

  it('prices text per 1 000 tokens, charged by usage but never above the checked maximum', () => {
    const price = { unit: '1k-tokens' as const, usd: 0.01 }
    const input = {
      kind: 'text' as const,
      messages: [{ role: 'user' as const, content: 'x'.repeat(40) }],
      max_tokens: 90,
    }
    // 10 prompt tokens (four characters a token) + 90.
    expect(maxPriceNano(price, input)).toBe(1_000_000)
    expect(finalPriceNano(price, input, { prompt_tokens: 10, completion_tokens: 40 })).toBe(500_000)
    expect(finalPriceNano(price, input, { prompt_tokens: 10, completion_tokens: 4000 })).toBe(
      1_000_000,
    )
  })
})

describe('model ids', () => {
  it('need a hyphen, so that no endpoint id (14 letters and digits) is one', () => {
    expect(isValidModelId('black-forest-labs-flux-1-schnell')).toBe(true)
    expect(isValidModelId('qwen2.5-7b')).toBe(true)
    expect(isValidModelId('abcdefgh012345')).toBe(false)
    expect(isValidModelId('Upper-case')).toBe(false)
    expect(isValidModelId('-leading')).toBe(false)
  })
})
