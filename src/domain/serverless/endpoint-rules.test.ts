import { describe, expect, it } from 'vitest'
import {
  DEFAULT_ENDPOINT_TIMEOUT_MS,
  MAX_ENDPOINT_TIMEOUT_MS,
  MAX_IDLE_TIMEOUT_S,
  MIN_ENDPOINT_TIMEOUT_MS,
  MIN_IDLE_TIMEOUT_S,
  imageOrHostsChanged,
  nextVersion,
  WORKER_FIELDS,
} from './endpoint-rules.js'
import { requestUrlsOf, type Endpoint } from './endpoint.js'

const endpoint: Endpoint = {
  id: 'abc',
  accountId: 'acct',
  name: 'n',
  type: 'QUEUE',
  templateId: null,
  image: 'i',
  args: '',
  disk: 50,
  env: {},
  ports: [],
  registry: null,
  gpu: null,
  cpu: [{ id: 'cpu3c', vcpuCount: 2, memory: 4 }],
  workers: { min: 0, max: 3, idleTimeout: 5 },
  scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
  dataCenterIds: [],
  networkVolumes: [],
  timeout: 300000,
  flashboot: 'OFF',
  version: 7,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
}

describe('endpoint rules', () => {
  it('has the documented bounds', () => {
    expect([MIN_IDLE_TIMEOUT_S, MAX_IDLE_TIMEOUT_S]).toEqual([1, 3600])
    expect([MIN_ENDPOINT_TIMEOUT_MS, DEFAULT_ENDPOINT_TIMEOUT_MS, MAX_ENDPOINT_TIMEOUT_MS]).toEqual(
      [5_000, 300_000, 604_800_000],
    )
  })

  it('bumps the version for worker fields only', () => {
    expect(
      nextVersion(endpoint, {
        ...endpoint,
        name: 'x',
        workers: { min: 1, max: 1, idleTimeout: 1 },
      }),
    ).toBe(7)
    expect(nextVersion(endpoint, { ...endpoint, env: { ...endpoint.env } })).toBe(7)
    for (const field of WORKER_FIELDS) {
      expect(nextVersion(endpoint, { ...endpoint, [field]: 'changed' }), field).toBe(8)
    }
  })

  it('builds the job API URLs under the base, with literal {job_id}', () => {
    expect(requestUrlsOf('http://h:1/', 'abc')).toEqual({
      run: 'http://h:1/v2/abc/run',
      runSync: 'http://h:1/v2/abc/runsync',
      status: 'http://h:1/v2/abc/status/{job_id}',
      stream: 'http://h:1/v2/abc/stream/{job_id}',
      cancel: 'http://h:1/v2/abc/cancel/{job_id}',
      retry: 'http://h:1/v2/abc/retry/{job_id}',
      purgeQueue: 'http://h:1/v2/abc/purge-queue',
      health: 'http://h:1/v2/abc/health',
    })
  })

  it('pulls again ahead of time only for a change of the image or of the hosts that may run it', () => {
    const changed = (change: Partial<Endpoint>) =>
      imageOrHostsChanged(endpoint, { ...endpoint, ...change })
    // What a worker runs, and where it may run.
    expect(changed({ image: 'i:2' })).toBe(true)
    expect(changed({ registry: 'reg_1' })).toBe(true)
    expect(changed({ cpu: [{ id: 'cpu5c', vcpuCount: 2, memory: 4 }] })).toBe(true)
    const gpu = { pools: ['ADA_24' as const], excludedTypes: [], count: 1 }
    const anyCuda = { allowedCudaVersions: [], minCudaVersion: null }
    expect(changed({ cpu: null, gpu: { ...gpu, ...anyCuda } })).toBe(true)
    expect(changed({ dataCenterIds: ['EU-RO-1'] })).toBe(true)
    expect(changed({ hostLabels: ['ib=true'] })).toBe(true)
    // Neither: the same image on the same hosts.
    expect(changed({})).toBe(false)
    expect(changed({ hostLabels: [] })).toBe(false)
    expect(
      changed({ name: 'renamed', env: { A: '1' }, workers: { min: 1, max: 3, idleTimeout: 5 } }),
    ).toBe(false)
    expect(changed({ version: 8, timeout: 600_000, args: 'python -u other.py' })).toBe(false)
  })
})
