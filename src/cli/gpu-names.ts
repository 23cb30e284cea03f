import { UsageError } from './usage-error.js'

/** A GPU type as `GET /v2/catalog/gpus` lists it. */
export interface GpuTypeName {
  id: string
  name: string
}

/** A `--gpu` the catalog does not know: the user's typo, so a usage error. */
export class UnknownGpuTypeError extends UsageError {
  override name = 'UnknownGpuTypeError'
}

/** Case, spaces and punctuation do not matter: `rtx-4090` is `RTX 4090`. */
const normal = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '')

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
    }
    previous = current
  }
  return previous[b.length]!
}

const label = (type: GpuTypeName) => (type.name === type.id ? type.id : `${type.id} (${type.name})`)

/**
 * The GPU type id a person meant: an id, or a display name such as `RTX 4090`, in any case and
 * spacing. Anything else is an error naming the closest types: those whose id or name contains
 * what was given, else the nearest by edit distance.
 */
export function resolveGpuType(given: string, types: readonly GpuTypeName[]): string {
  const exact = types.find((t) => t.id === given)
  if (exact) return exact.id
  const wanted = normal(given)
  const matches = types.filter((t) => normal(t.id) === wanted || normal(t.name) === wanted)
  if (matches.length === 1) return matches[0]!.id
  const containing = types.filter(
    (t) => wanted !== '' && (normal(t.id).includes(wanted) || normal(t.name).includes(wanted)),
  )
  const closest =
    matches.length > 1
      ? matches
      : containing.length > 0
        ? containing
        : [...types]
            .map((t) => ({
              t,
              d: Math.min(editDistance(wanted, normal(t.id)), editDistance(wanted, normal(t.name))),
            }))
            .sort((x, y) => x.d - y.d)
            .map(({ t }) => t)
  const shown = closest.slice(0, 5).map(label)
  throw new UnknownGpuTypeError(
    `${matches.length > 1 || containing.length > 1 ? 'ambiguous' : 'unknown'} GPU type "${given}"` +
      (shown.length > 0 ? `; did you mean: ${shown.join(', ')}?` : '') +
      ' (podyard catalog gpus lists them all)',
  )
}

/** The ids of `given` GPU types (ids or display names), checked against the server's catalog. */
export async function gpuTypeIds(
  client: { get<T>(path: string): Promise<T> },
  given: readonly string[],
): Promise<string[]> {
  if (given.length === 0) return []
  const { gpus } = await client.get<{ gpus: GpuTypeName[] }>('/v2/catalog/gpus')
  return given.map((name) => resolveGpuType(name, gpus))
}
