/**
 * RunPod's dockerArgs is a shell line, or the JSON form `{"cmd": [...], "entrypoint": [...]}`
 * (dstack sends it), which names the image's command and entrypoint as argument lists, as
 * Docker's CMD and ENTRYPOINT do. Run as a shell line, that JSON fails at once.
 */
export interface ImageCommand {
  /** Replaces the image's entrypoint; absent: the image's own. */
  entrypoint?: string[]
  /** Replaces the image's command; absent: none when `entrypoint` is given, else the image's. */
  cmd?: string[]
}

const isStringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string')

/**
 * The JSON form of `args`, or undefined for a shell line. Only an object whose keys are `cmd`
 * and `entrypoint` (one at least), each a list of strings, is the JSON form: any other text,
 * JSON or not, stays a shell line.
 */
export function imageCommandOf(args: string): ImageCommand | undefined {
  const text = args.trim()
  if (!text.startsWith('{')) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return undefined
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined
  const entries = Object.entries(parsed as Record<string, unknown>)
  if (entries.length === 0) return undefined
  const command: ImageCommand = {}
  for (const [key, value] of entries) {
    if ((key !== 'cmd' && key !== 'entrypoint') || !isStringList(value)) return undefined
    command[key] = value
  }
  return command
}
