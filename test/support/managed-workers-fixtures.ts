import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, expect } from 'vitest'
import { callJson, startTestPlatform, type TestPlatform } from './platform.js'
import { SDK_WORKER_FIXTURE as FIXTURE } from './sdk-worker-endpoints.js'

/**
 * What the managed serverless worker tests share (test/serverless/managed-workers-*.test.ts):
 * `managedWorkersSuite`, the platform whose workers are real podyard/worker processes
 * (test/fixtures/sdk-worker.mjs) under the process driver, and the calls the tests make to it.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/**
 * The platform a managed workers suite runs on, with a temporary directory its workers write
 * to (TEST_DIR), and its calls: call it in the suite's `describe`, where it adds the hooks that
 * start the platform and close it (removing the directory) at the end. `platform()` and `dir()`
 * are the running platform and its directory, from the first `beforeAll` on.
 */
export function managedWorkersSuite() {
  let platform: TestPlatform
  let dir: string

  const call = (pathAndQuery: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
    callJson(platform, pathAndQuery, init)

  async function createEndpoint(overrides: Record<string, unknown> = {}): Promise<string> {
    const json: Json = {
      name: 'managed',
      image: 'podyard/test-worker',
      args: `${process.execPath} ${FIXTURE}`,
      disk: 5,
      env: { TEST_DIR: dir },
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      workers: { min: 0, max: 3, idleTimeout: 2 },
      scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
      ...overrides,
    }
    // RunPod's v2 contract refuses an idle timeout beside REQUEST_COUNT scaling (the default
    // of 10 s applies there).
    if (json.scaling.type === 'REQUEST_COUNT') {
      json.workers = { ...json.workers, idleTimeout: undefined }
    }
    const created = await call('/v2/serverless', { method: 'POST', json })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return created.body.id as string
  }

  const workersOf = async (id: string) => (await call(`/v2/serverless/${id}/workers`)).body
  const health = async (id: string) => (await call(`/v2/${id}/health`)).body
  const run = async (id: string, input: Record<string, unknown>, policy?: unknown) =>
    (
      await call(`/v2/${id}/run`, {
        method: 'POST',
        json: { input, ...(policy ? { policy } : {}) },
      })
    ).body.id as string
  const status = async (id: string, jobId: string) => (await call(`/v2/${id}/status/${jobId}`)).body

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-workers-'))
    platform = await startTestPlatform({
      // The fixture lives in the repository, which a bubblewrap sandbox does not show.
      sandbox: 'none',
      workers: {
        intervalMs: 200,
        pingIntervalMs: 1000,
        heartbeatTimeoutMs: 5000,
        startTimeoutMs: 30_000,
        stopGraceMs: 2000,
        unhealthyRetentionMs: 1500,
      },
    })
  })

  afterAll(async () => {
    await platform?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  return {
    platform: () => platform,
    dir: () => dir,
    call,
    createEndpoint,
    workersOf,
    health,
    run,
    status,
  }
}
