import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import { platformStores } from '../support/platform-stores.js'
import type { TestPlatform } from '../support/platform.js'

/**
 * `promtool check metrics` (Debian's prometheus package) on a real server's `/metrics`, read
 * with the admin's key after jobs, a pod and a self-started worker, so that every family has
 * series. Opt-in: PODYARD_TEST_PROMTOOL=1 (.ci/run installs the package and sets it); the
 * naming rules that need no promtool are checked always (src/api/http/metric-names.test.ts).
 */
const enabled = process.env.PODYARD_TEST_PROMTOOL === '1'
const promtool = process.env.PODYARD_PROMTOOL_PATH ?? 'promtool'

describe.runIf(enabled).each(platformStores())('promtool check metrics on $name', (store) => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await store.start()
    const created = await platform.call('/v2/serverless', {
      method: 'POST',
      json: { name: 'promtool', image: 'worker:1', gpu: { pools: ['ADA_24'] } },
    })
    const { id } = (await created.json()) as { id: string }
    const { workerKey } = (await (
      await platform.call(`/v2/serverless/${id}/worker-key`)
    ).json()) as { workerKey: string }
    for (const n of [1, 2]) {
      await platform.call(`/v2/${id}/run`, { method: 'POST', json: { input: { n } } })
    }
    const take = await platform.call(`/v2/${id}/job-take/promtool-worker?wait=1000`, {
      key: workerKey,
    })
    const job = (await take.json()) as { id: string }
    await platform.call(`/v2/${id}/job-done/promtool-worker/${job.id}`, {
      method: 'POST',
      key: workerKey,
      json: { output: { ok: true } },
    })
    await platform.call('/v2/pods', {
      method: 'POST',
      json: {
        name: 'promtool-pod',
        image: 'x',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args: 'sleep 30',
      },
    })
  })
  afterAll(() => platform?.close())

  it('finds no problem in what /metrics serves', async () => {
    const response = await platform.call('/metrics')
    expect(response.status).toBe(200)
    const text = await response.text()
    expect(text).toContain('podyard_jobs_ended_total')
    const check = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' })
    expect(
      check.error,
      `${promtool} not found: install Debian's prometheus package`,
    ).toBeUndefined()
    // promtool prints one line per problem and exits 1 when there is any.
    expect(`${check.stdout}${check.stderr}`.trim()).toBe('')
    expect(check.status).toBe(0)
  })

  it("accepts deploy/prometheus-alerts.yml's rules", () => {
    const check = spawnSync(promtool, ['check', 'rules', 'deploy/prometheus-alerts.yml'], {
      cwd: repoRoot,
      encoding: 'utf8',
    })
    expect(check.error).toBeUndefined()
    expect(`${check.stdout}${check.stderr}`).toMatch(/SUCCESS: \d+ rules found/)
    expect(check.status).toBe(0)
  })
})
