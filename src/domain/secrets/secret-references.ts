/**
 * `{{ RUNPOD_SECRET_<name> }}` as RunPod writes a secret into an env value (spaces inside the
 * braces optional). A value may hold several, and text around them.
 */
const REFERENCE = /\{\{\s*RUNPOD_SECRET_([A-Za-z0-9_]+)\s*\}\}/g

/** The secret names an env refers to, each once. */
export function secretNamesIn(env: Record<string, string>): string[] {
  const names = new Set<string>()
  for (const value of Object.values(env)) {
    for (const match of value.matchAll(REFERENCE)) names.add(match[1]!)
  }
  return [...names]
}

/** The env with each reference replaced by `values.get(name)`; every name must be there. */
export function withSecretValues(
  env: Record<string, string>,
  values: ReadonlyMap<string, string>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).map(([key, value]) => [
      key,
      value.replace(REFERENCE, (_whole, name: string) => values.get(name) ?? ''),
    ]),
  )
}
