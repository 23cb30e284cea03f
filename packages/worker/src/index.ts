/**
 * `@podyard/worker` (also `podyard/worker`): run TypeScript job handlers as workers of a podyard
 * (or RunPod-protocol) serverless endpoint. See README.md and podyard's docs/worker-sdk.md.
 */
export { serve } from './serve.js'
export {
  ABORT_SETTLE_MS,
  DEFAULT_GRACE_PERIOD_MS,
  type Handler,
  type JobContext,
  type ServeOptions,
  type StopOptions,
  type WorkerHandle,
  type WorkerLogger,
} from './serve-options.js'
export { STOP_CONFIRM_MS } from './job-leases.js'
export { TEST_INPUT_FILE, type LocalTestResult } from './local-test.js'
export { SDK_VERSION } from './version.js'
export {
  DEFAULT_PING_INTERVAL_MS,
  endpointWorkerUrls,
  resolveConnection,
  WorkerConfigError,
  type WorkerConnection,
  type WorkerConnectionOptions,
} from './worker-config.js'
export type { WorkerJob } from './worker-protocol.js'
