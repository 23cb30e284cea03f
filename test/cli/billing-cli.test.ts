import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/shared/clock.js'
import { runCli } from '../support/cli.js'
import { json } from '../support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'

/**
 * `podyard billing ...` (docs/billing.md "CLI") as a real process against a real
 * server whose meter is ticked on a manual clock: a pod and a network volume used for 90
 * minutes from 2026-03-02T10:00Z (a Monday), then the pod deleted and a day more metered.
 */

const HOUR = 3_600_000
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe('podyard billing', { timeout: 90_000 }, () => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z')
  let platform: TestPlatform
  let pod: { id: string }
  let volume: { id: string }
  const flags = () => ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
  const billing = (args: string[]) => runCli(['billing', ...args, ...flags()])
  const hourWindow = [
    '--bucket',
    'hour',
    '--start',
    '2026-03-02T10:00:00Z',
    '--end',
    '2026-03-02T12:00:00Z',
  ]

  beforeAll(async () => {
    platform = await startTestPlatform(
      { billing: { meterIntervalMs: 24 * HOUR, enforce: false } },
      { clock },
    )
    pod = await json(
      await platform.call('/v2/pods', {
        method: 'POST',
        json: { name: 'billed', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 }, disk: 20 },
      }),
      201,
    )
    volume = await json(
      await platform.call('/v2/network-volumes', {
        method: 'POST',
        json: { name: 'data', size: 10, dataCenterId: 'EU-RO-1' },
      }),
      201,
    )
    clock.advance(90 * 60_000)
    await platform.meter.tick()
    expect((await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })).status).toBe(204)
    clock.advance(24 * HOUR)
    await platform.meter.tick()
  })
  afterAll(async () => {
    await platform?.close()
  })

  it('pods: a table per hour bucket with amounts to the millionth, and the totals', async () => {
    const table = await billing(['pods', ...hourWindow])
    expect(table.code, table.stderr).toBe(0)
    const lines = table.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^START\s+END\s+POD\s+TOTAL\s+GPU\s+CPU\s+DISK$/)
    expect(lines[1]!.split(/\s+/)).toEqual([
      '2026-03-02T10:00:00.000Z',
      '2026-03-02T11:00:00.000Z',
      pod.id,
      '$0.082778',
      '$0.00',
      '$0.08',
      '$0.002778',
    ])
    expect(lines[2]!.split(/\s+/)).toEqual([
      '2026-03-02T11:00:00.000Z',
      '2026-03-02T12:00:00.000Z',
      pod.id,
      '$0.041389',
      '$0.00',
      '$0.04',
      '$0.001389',
    ])
    expect(lines[3]).toBe(
      'hour buckets from 2026-03-02T10:00:00.000Z to 2026-03-02T12:00:00.000Z: 2 record(s), 1 pod(s), total $0.124167',
    )
    expect(lines).toHaveLength(4)

    // --json is the server's answer, as is; --pod filters.
    const asJson = await billing(['pods', ...hourWindow, '--pod', pod.id, '--json'])
    expect(asJson.code, asJson.stderr).toBe(0)
    const direct = await json<Json>(
      await platform.call(
        `/v2/billing/pods?bucketSize=hour&startTime=2026-03-02T10:00:00Z&endTime=2026-03-02T12:00:00Z&podId=${pod.id}`,
      ),
    )
    expect(JSON.parse(asJson.stdout)).toEqual(direct)
    expect(direct.records).toHaveLength(2)
    const other = await billing(['pods', ...hourWindow, '--pod', 'nosuchpod0000', '--json'])
    expect(JSON.parse(other.stdout).records).toEqual([])
  })

  it('totals (the default): one row per bucket, only the kinds of usage that cost something', async () => {
    const window = ['--start', '2026-03-01T00:00:00Z', '--end', '2026-03-03T00:00:00Z']
    const table = await billing(window)
    expect(table.code, table.stderr).toBe(0)
    const lines = table.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^START\s+END\s+TOTAL\s+POD CPU\s+POD DISK\s+STORAGE STANDARD$/)
    // The day without spend (2026-03-01) is left out, and the summary says so.
    expect(lines[1]).toMatch(/^2026-03-02T00:00:00.000Z\s+2026-03-03T00:00:00.000Z\s+\$0\.\d+/)
    expect(lines[1]).toContain('$0.12 ')
    expect(lines[2]).toMatch(
      /^day buckets from 2026-03-01T00:00:00.000Z to 2026-03-03T00:00:00.000Z: 2 record\(s\), total \$0\.\d{2,6}; 1 without spend not shown \(--all shows them\)$/,
    )
    expect(lines).toHaveLength(3)
    // --all lists every bucket.
    const all = (await billing([...window, '--all'])).stdout.trimEnd().split('\n')
    expect(all[1]).toMatch(
      /^2026-03-01T00:00:00.000Z\s+2026-03-02T00:00:00.000Z\s+\$0\.00\s+\$0\.00\s+\$0\.00\s+\$0\.00$/,
    )
    expect(all[2]).toMatch(/^2026-03-02T00:00:00.000Z\s+2026-03-03T00:00:00.000Z\s+\$0\.\d+/)
    expect(all[3]).toMatch(/: 2 record\(s\), total \$0\.\d{2,6}$/)
    // A window without any spend says so, not 30 rows of $0.00.
    const idle = await billing(['--start', '2026-01-01T00:00:00Z', '--end', '2026-01-31T00:00:00Z'])
    expect(idle.stdout).toBe(
      'No spend. day buckets from 2026-01-01T00:00:00.000Z to 2026-01-31T00:00:00.000Z: 30 record(s), total $0.00; 30 without spend not shown (--all shows them)\n',
    )
    // `billing totals` is the same report.
    const named = await billing(['totals', ...window])
    expect(named.stdout).toBe(table.stdout)
    const asJson = JSON.parse((await billing([...window, '--json'])).stdout) as Json
    expect(asJson.records).toHaveLength(2)
    expect(asJson.records[1]).toMatchObject({ podCpuAmount: 0.12, serverlessGpuAmount: 0 })
  })

  it('volumes, serverless and endpoints, with --last and their filters', async () => {
    const volumes = await billing(['volumes', '--volume', volume.id, '--last', '2', '--json'])
    expect(volumes.code, volumes.stderr).toBe(0)
    const report = JSON.parse(volumes.stdout) as Json
    expect(report.metadata).toMatchObject({
      query: { bucketSize: 'day', lastN: 2, startTime: '2026-03-02T00:00:00.000Z' },
      uniqueNetworkVolumeCount: 1,
    })
    expect(report.records.map((r: Json) => r.networkVolumeId)).toEqual([volume.id, volume.id])
    const table = await billing(['volumes', '--last', '2'])
    expect(table.stdout).toMatch(/^START\s+END\s+VOLUME\s+TOTAL\s+STANDARD\s+HIGH-PERF\n/)
    expect(table.stdout).toContain(', 1 volume(s), total $0.')

    const serverless = await billing(['serverless', '--endpoint', 'nosuchendpoint'])
    expect(serverless.code, serverless.stderr).toBe(0)
    expect(serverless.stdout).toMatch(
      /^No usage\. day buckets from \S+ to \S+: 0 record\(s\), 0 endpoint\(s\), total \$0\.00\n$/,
    )
    const endpoints = await billing(['endpoints', '--bucket', 'month', '--last', '1'])
    expect(endpoints.stdout).toMatch(/^No usage\. month buckets from 2026-03-01T00:00:00.000Z/)
    expect(endpoints.stdout).toContain('0 model(s)')
  })

  it('prints the problem and exits non-zero on a bad flag value', async () => {
    const bucket = await billing(['--bucket', 'fortnight'])
    expect(bucket.code).not.toBe(0)
    expect(bucket.stderr).toContain(
      "option '--bucket <size>' argument 'fortnight' is invalid. Allowed choices are hour, day, week, month, year.",
    )
    const last = await billing(['pods', '--last', '0'])
    expect(last.code).not.toBe(0)
    expect(last.stderr).toContain('expected a whole number of buckets, 1 or more')
    // Dates and windows are the server's to judge: its 422 detail is the error.
    const start = await billing(['--start', 'yesterday'])
    expect(start.code).toBe(2)
    expect(start.stderr).toMatch(/^podyard: 422 .*startTime/)
    const both = await billing(['--start', '2026-03-01T00:00:00Z', '--last', '2'])
    expect(both.code).toBe(2)
    expect(both.stderr).toMatch(/^podyard: 422 /)
    // A filter belongs to its report.
    const filter = await billing(['pods', '--volume', volume.id])
    expect(filter.code).not.toBe(0)
    expect(filter.stderr).toContain("unknown option '--volume'")
  })
})
