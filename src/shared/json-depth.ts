/**
 * The deepest nesting of arrays and objects a JSON body may have (docs/api.md, "Nesting"). A
 * value nested about 5 000 levels deep overflows the stack of the recursive serializers
 * (`JSON.stringify`, Fastify's), so it is refused as it arrives; no client needs more than a
 * few dozen levels.
 */
export const MAX_JSON_DEPTH = 256

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COMMA = 0x2c

/**
 * Whether the JSON text nests arrays and objects deeper than `max` (`{}` is depth 1). A scan of
 * the text, without recursion and without parsing: brackets inside strings do not count. Text
 * that is not JSON gives some answer; parsing it afterwards reports what is wrong with it.
 */
export function jsonDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  // Fewer bracket characters than the bound cannot nest past it.
  if (text.length <= max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
  }
  return false
}

export interface CutJson {
  /** The text with every value that opens deeper than the bound replaced by `null`. */
  text: string
  /** When the root is an array: the indices of its items in which something was cut. */
  cutItems: number[]
  /** Whether anything was cut. */
  cut: boolean
}

/**
 * The JSON text with every array or object that would open deeper than `max` replaced by
 * `null`, so that what is within the bound can still be parsed and read (the job ids of a
 * job-done-batch whose outputs are too deep), and which items of a root array lost something.
 */
export function cutDeepJson(text: string, max = MAX_JSON_DEPTH): CutJson {
  if (!jsonDeeperThan(text, max)) return { text, cutItems: [], cut: false }
  const parts: string[] = []
  const cutItems: number[] = []
  let rootIsArray = false
  let item = 0
  let kept = 0
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
      continue
    }
    if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === 0) rootIsArray = c === OPEN_BRACKET
      if (depth === max) {
        const end = closingIndex(text, i)
        parts.push(text.slice(kept, i), 'null')
        if (rootIsArray && cutItems.at(-1) !== item) cutItems.push(item)
        kept = end + 1
        i = end
        continue
      }
      depth++
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
    else if (c === COMMA && depth === 1) item++
  }
  parts.push(text.slice(kept))
  return { text: parts.join(''), cutItems, cut: true }
}

/** Where the array or object opening at `start` closes; the end of the text when it does not. */
function closingIndex(text: string, start: number): number {
  let depth = 0
  let inString = false
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === 0) return i
    }
  }
  return text.length - 1
}
