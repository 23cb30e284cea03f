import path from 'node:path'
import { repoRoot } from './cli.js'
import { callJson, type TestPlatform } from './platform.js'

/** The SDK worker the tests' endpoints run (test/fixtures/sdk-worker.mjs). */
export const SDK_WORKER_FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'sdk-worker.mjs')

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/**
 * POST /v2/serverless as `key`'s account: a CPU endpoint (cpu3c, 2 vCPUs, one worker) whose
 * workers run the SDK fixture as processes; `fields` adds to or replaces the body's fields.
 */
export function createSdkWorkerEndpoint(
  platform: TestPlatform,
  key: string,
  name: string,
  fields: Record<string, unknown> = {},
): Promise<{ status: number; body: Json }> {
  return callJson(platform, '/v2/serverless', {
    method: 'POST',
    key,
    json: {
      name,
      image: 'podyard/test-worker',
      args: `${process.execPath} ${SDK_WORKER_FIXTURE}`,
      disk: 5,
      env: { TEST_DIR: platform.dataDir },
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      workers: { min: 1, max: 1, idleTimeout: 5 },
      ...fields,
    },
  })
}

/**
 * The workers of endpoint `id` as `key`'s account sees them, read every 100 ms until `done`
 * holds of them or `timeoutMs` passes; the last list either way, for the caller's assertion
 * to show.
 */
export async function endpointWorkersWhen(
  platform: TestPlatform,
  key: string,
  id: string,
  done: (workers: Json[]) => boolean,
  timeoutMs = 20_000,
): Promise<Json[]> {
  const workersOf = async () =>
    (await callJson(platform, `/v2/serverless/${id}/workers`, { key })).body.workers as Json[]
  const deadline = Date.now() + timeoutMs
  let workers = await workersOf()
  while (!done(workers) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    workers = await workersOf()
  }
  return workers
}
