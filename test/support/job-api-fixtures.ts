import { expect } from 'vitest'
import { createTestEndpoint, json } from './http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from './platform.js'

/**
 * A worker that calls the platform exactly as runpod-python 1.12's `runpod.serverless.start`
 * does (wire-compat §5): URLs built from RUNPOD_WEBHOOK_* templates, the raw key in
 * Authorization, JSON bodies labelled application/x-www-form-urlencoded.
 */
export interface PythonShapedWorker {
  workerId: string
  take(options?: { inProgress?: boolean; wait?: number }): Promise<Response>
  takeBatch(size: number, options?: { inProgress?: boolean; wait?: number }): Promise<Response>
  done(jobId: string, body: unknown, options?: { isStream?: boolean }): Promise<Response>
  stream(jobId: string, output: unknown): Promise<Response>
  stop(options?: { wait?: number }): Promise<Response>
  ping(jobIds?: string[], extra?: string): Promise<Response>
}

export function pythonShapedWorker(
  baseUrl: string,
  endpointId: string,
  key: string,
  workerId = `w${Math.random().toString(36).slice(2, 12)}`,
): PythonShapedWorker {
  const v2 = `${baseUrl}/v2/${endpointId}`
  // What a platform would inject; $ID and $RUNPOD_POD_ID substituted as the worker does.
  const getJob = `${v2}/job-take/$ID?gpu=NVIDIA+RTX+A4000`.replace('$ID', workerId)
  const postOutput = `${v2}/job-done/$RUNPOD_POD_ID/$ID?gpu=NVIDIA+RTX+A4000`
  const postStream = `${v2}/job-stream/$RUNPOD_POD_ID/$ID?gpu=NVIDIA+RTX+A4000`
  const ping = `${v2}/ping/$RUNPOD_POD_ID`.replace('$RUNPOD_POD_ID', workerId)
  const auth = { Authorization: key }
  const post = (url: string, jobId: string, body: unknown) =>
    fetch(url.replace('$RUNPOD_POD_ID', workerId).replace('$ID', jobId), {
      method: 'POST',
      headers: {
        ...auth,
        'Content-Type': 'application/x-www-form-urlencoded',
        charset: 'utf-8',
        'X-Request-ID': jobId,
      },
      body: JSON.stringify(body),
    })
  const waitParam = (wait: number | undefined) => (wait === undefined ? '' : `&wait=${wait}`)
  return {
    workerId,
    take: ({ inProgress = false, wait } = {}) =>
      fetch(`${getJob}${waitParam(wait)}&job_in_progress=${inProgress ? 1 : 0}`, {
        headers: auth,
      }),
    takeBatch: (size, { inProgress = false, wait } = {}) =>
      fetch(
        `${getJob.replace('/job-take/', '/job-take-batch/')}&batch_size=${size}${waitParam(wait)}&job_in_progress=${inProgress ? 1 : 0}`,
        { headers: auth },
      ),
    done: (jobId, body, { isStream = false } = {}) =>
      post(`${postOutput}&isStream=${isStream}`, jobId, body),
    stream: (jobId, output) => post(`${postStream}&isStream=false`, jobId, { output }),
    stop: ({ wait } = {}) =>
      fetch(`${getJob.replace('/job-take/', '/job-stop/')}${waitParam(wait)}`, { headers: auth }),
    ping: (jobIds = [], extra = '') =>
      fetch(
        `${ping}?${jobIds.length > 0 ? `job_id=${jobIds.join(',')}&` : ''}runpod_version=1.12.0${extra}`,
        { headers: auth },
      ),
  }
}

export type Json = Record<string, unknown>
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A problem+json answer's body, after checking its status and content type. */
export async function problem(response: Response, status: number): Promise<Json> {
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return json(response, status)
}

/**
 * A platform of the job API tests, with the key of a second account (`jobs-stranger`) that
 * must never see the test account's endpoints and jobs.
 */
export async function startJobApiPlatform(): Promise<{
  platform: TestPlatform
  strangerKey: string
}> {
  const platform = await startTestPlatform()
  const strangerKey = await otherAccountKey(platform, 'jobs-stranger@example.com')
  return { platform, strangerKey }
}

/**
 * Calls the job API tests make on the platform `platform()` answers (once their beforeAll has
 * started it): create a queue endpoint with nothing to run, and call one of its `/v2/<id>` routes.
 */
export function jobApiCalls(platform: () => TestPlatform) {
  return {
    createEndpoint: (name = 'ep') => createTestEndpoint(platform(), name),
    jobCall: (endpointId: string, path: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
      platform().call(`/v2/${endpointId}${path}`, init),
  }
}
