/**
 * Module resolution hooks (Node's `module.register`) of the handlers `podyard dev` runs under
 * Node.js, registered by dev-node-preload.ts. They run in Node's hooks thread and import
 * nothing but Node's built-ins.
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
