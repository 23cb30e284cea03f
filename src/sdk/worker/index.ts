/**
 * `podyard/worker`: the worker SDK, which is its own package (`@podyard/worker`,
 * packages/worker/). Sources import it through this file. In the build, `dist/sdk/worker/` is
 * the package's own build (tsconfig.sdk.json compiles packages/worker/src there, replacing what
 * this file compiles to), so that dist/ is self-contained: the public models' workers see only
 * dist/ (docs/public-endpoints.md, "How the models run").
 */
export * from '../../../packages/worker/src/index.js'
