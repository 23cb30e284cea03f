/**
 * Module resolution hooks of the handlers `podyard dev` runs under Node.js, registered by
 * dev-node-preload.ts: `resolve` for `module.register` (Node's hooks thread), `resolveSdkSync`
 * for `module.registerHooks` (the handler's own thread). They import nothing but Node's
 * built-ins.
 *
 * `podyard/worker` and `@podyard/worker` resolve as Node resolves them from the handler's folder
 * first: a copy installed there wins. Only when neither is installed there (or above it) do
 * they resolve to the worker SDK of the podyard that runs `podyard dev` (docs/dev.md).
 */

/** The names the worker SDK is imported by (docs/worker-sdk.md). */
export const SDK_SPECIFIERS: ReadonlySet<string> = new Set(['podyard/worker', '@podyard/worker'])

interface ResolveContext {
  conditions: string[]
  importAttributes: Record<string, string>
  parentURL?: string
}
interface ResolveResult {
  url: string
  format?: string | null
  shortCircuit?: boolean
}
type NextResolve = (specifier: string, context?: ResolveContext) => Promise<ResolveResult>
type NextResolveSync = (specifier: string, context?: ResolveContext) => ResolveResult
export type ResolveSync = (
  specifier: string,
  context: ResolveContext,
  nextResolve: NextResolveSync,
) => ResolveResult

/** The file URL of podyard's own copy of the SDK (dist/sdk/worker/index.js). */
let sdkUrl: string | undefined

export function initialize(data: { sdkUrl: string }): void {
  sdkUrl = data.sdkUrl
}

export async function resolve(
  specifier: string,
  context: ResolveContext,
  nextResolve: NextResolve,
): Promise<ResolveResult> {
  if (!SDK_SPECIFIERS.has(specifier) || sdkUrl === undefined) {
    return nextResolve(specifier, context)
  }
  try {
    return await nextResolve(specifier, context)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error
    return { url: sdkUrl, format: 'module', shortCircuit: true }
  }
}

/**
 * The same resolution, synchronous, for `module.registerHooks`, which runs for `import` and
 * `require` alike: `require` reports a missing module as `MODULE_NOT_FOUND`.
 */
export function resolveSdkSync(ownSdkUrl: string): ResolveSync {
  return (specifier, context, nextResolve) => {
    if (!SDK_SPECIFIERS.has(specifier)) return nextResolve(specifier, context)
    try {
      return nextResolve(specifier, context)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error
      return { url: ownSdkUrl, format: 'module', shortCircuit: true }
    }
  }
}
