/**
 * What `podyard dev` preloads into a Node.js handler (`node --import <this file>`): the worker
 * SDK's names, `podyard/worker` and `@podyard/worker`, resolve to the running podyard's own copy
 * when the handler's folder has none installed, for `import` (ES modules, through Node's
 * resolution hooks, dev-node-hooks.ts) and for `require` (CommonJS, which is what tsx makes of a
 * `.ts` file outside a `"type": "module"` package). A copy installed in the folder wins
 * (docs/dev.md, "The worker SDK without installing it").
 */
import Module, { register } from 'node:module'
import { fileURLToPath } from 'node:url'
import { resolveSdkSync, SDK_SPECIFIERS, type ResolveSync } from './dev-node-hooks.js'

/** podyard's own `podyard/worker` export (its package.json "exports"), or none if not built. */
function ownSdkUrl(): string | undefined {
  try {
    return import.meta.resolve('podyard/worker')
  } catch {
    return undefined
  }
}

type ResolveFilename = (request: string, ...rest: unknown[]) => string
/** Node.js 22.15 and later (not in Node 20's types). */
type RegisterHooks = (hooks: { resolve: ResolveSync }) => unknown

const sdkUrl = ownSdkUrl()
if (sdkUrl !== undefined) {
  const { registerHooks } = Module as unknown as { registerHooks?: RegisterHooks }
  if (typeof registerHooks === 'function') {
    // In this thread. A hooks module that `register` loads runs in Node's hooks thread, which
    // has only the hooks `register` put there: tsx (from Node 22.22.3) registers its own with
    // registerHooks, in this thread, so there the hooks thread could not load this folder's
    // .ts sources (podyard run from a checkout) and the handler died of ERR_MODULE_NOT_FOUND.
    registerHooks({ resolve: resolveSdkSync(sdkUrl) })
  } else {
    register('./dev-node-hooks.js', import.meta.url, { data: { sdkUrl } })
  }
  const sdkFile = fileURLToPath(sdkUrl)
  // CommonJS resolves through Module._resolveFilename, which `register`'s hooks do not reach
  // (Node 20); tsx wraps it too, and this wraps tsx's, so the folder's copy is tried first.
  const modules = Module as unknown as { _resolveFilename: ResolveFilename }
  const resolveFilename = modules._resolveFilename
  modules._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]) {
    try {
      return resolveFilename.call(this, request, ...rest)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (SDK_SPECIFIERS.has(request) && code === 'MODULE_NOT_FOUND') return sdkFile
      throw error
    }
  }
}
