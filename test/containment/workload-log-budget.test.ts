import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logEvents } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * Logs with a budget: a tenant's pod on the process driver that floods its
 * stdout. Before the fix its output and numbered log grew without bound under the data
 * directory (884 MB in the report), and the log route read the whole log into one string
 * (`RangeError: Invalid string length`, a 500, and the server's memory grown for good).
 */

const MIB = 1024 * 1024
/** workloadLogs.maxMb of this platform: the budget of each workload's log. */
const CAP_MB = 1
/** The flood: `seq 1 3000000` writes 3 million numbered lines, 20.9 MB, in well under a second. */
const LINES = 3_000_000
/**
 * What the budget may be over at rest: one entry of logs.jsonl written past a rotation (an
 * entry is at most a 64 KiB line, JSON-escaped: 6 bytes a byte at worst) and the unterminated
 * last line output.log may hold. This flood's lines are 7 bytes: its real slack is ~100 bytes.
 */
const SLACK_BYTES = 6 * 64 * 1024 + 1024

describe('a workload that floods its log (logs with a budget)', () => {
  let platform: TestPlatform
  let tenant: string
  let podId: string

  const logs = async (query: string, headers: Record<string, string> = {}) => {
    const response = await platform.call(`/v2/pods/${podId}/logs?${query}`, {
      key: tenant,
      headers,
    })
    const text = await response.text()
    return { status: response.status, text, events: response.status === 200 ? logEvents(text) : [] }
  }

  /** Bytes of the workload's log files on disk (output.log, logs.jsonl, ...). */
  const logBytes = () => {
    const dir = path.join(platform.dataDir, '.podyard', 'runtime', 'process', podId)
    const files = readdirSync(dir).filter((name) => /^(output|logs)/.test(name))
    return Object.fromEntries(files.map((name) => [name, statSync(path.join(dir, name)).size]))
  }

  beforeAll(async () => {
    // sandbox none: the budget does not depend on the sandbox, and this runs where bubblewrap
    // does not; the pod is still an ordinary account's.
    platform = await startTestPlatform({
      sandbox: 'none',
      workloadLogs: { maxMb: CAP_MB },
    })
    tenant = await otherAccountKey(platform, 'flood@example.com')
    const created = await platform.call('/v2/pods', {
      method: 'POST',
      key: tenant,
      json: {
        name: 'flood',
        image: 'ubuntu',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args: `seq 1 ${LINES}; exec sleep 300`,
      },
    })
    expect(created.status, await created.clone().text()).toBe(201)
    podId = ((await created.json()) as { id: string }).id
    await until(
      'the last line in the log',
      async () => (await logs('follow=false&source=container&tail=1')).events.map((e) => e.line),
      (lines) => lines[0] === String(LINES),
      90_000,
    )
  }, 120_000)

  afterAll(() => platform?.close())

  it('keeps the log files on disk within the budget', async () => {
    const sizes = logBytes()
    const total = Object.values(sizes).reduce((sum, size) => sum + size, 0)
    console.log(`log files of a ${LINES}-line flood, budget ${CAP_MB} MiB:`, sizes, total)
    expect(total, JSON.stringify(sizes)).toBeLessThanOrEqual(CAP_MB * MIB + SLACK_BYTES)
  })

  it("answers tail=N with the newest lines (and prints the server's RSS around the reads)", async () => {
    const before = process.memoryUsage().rss
    const five = await logs('follow=false&source=container&tail=5')
    expect(five.status).toBe(200)
    expect(five.events.map((e) => e.line)).toEqual(
      [4, 3, 2, 1, 0].map((back) => String(LINES - back)),
    )
    for (let i = 0; i < 10; i++) {
      const most = await logs('follow=false&source=container&tail=5000')
      expect(most.status).toBe(200)
      // The newest 5000 lines, in order, with nothing missing between them.
      expect(most.events).toHaveLength(5000)
      expect(most.events.map((e) => Number(e.line))).toEqual(
        Array.from({ length: 5000 }, (_, k) => LINES - 4999 + k),
      )
    }
    const after = process.memoryUsage().rss
    console.log(
      `server RSS around 11 reads of the tail: ${(before / MIB).toFixed(0)} MiB before, ` +
        `${(after / MIB).toFixed(0)} MiB after`,
    )
  })

  it('resumes from an old Last-Event-ID with at most the route bound of lines (5000)', async () => {
    const resumed = await logs('follow=false&source=container', {
      'last-event-id': '2026-01-01T00:00:00.000Z/0',
    })
    expect(resumed.status).toBe(200)
    expect(resumed.events.length).toBeGreaterThan(0)
    expect(resumed.events.length).toBeLessThanOrEqual(5000)
    expect(resumed.events.at(-1)!.line).toBe(String(LINES))
  })

  it('keeps only the newest lines, and follows on after them', async () => {
    const all = await logs('follow=false&source=container&tail=5000')
    const oldest = Number(all.events[0]!.line)
    // Far fewer than 3 million lines are kept: the oldest went.
    expect(oldest).toBeGreaterThan(LINES - 20_000)
    const follow = new AbortController()
    const streaming = await platform.call(`/v2/pods/${podId}/logs?source=container&tail=2`, {
      key: tenant,
      signal: follow.signal,
    })
    expect(streaming.status).toBe(200)
    const reader = streaming.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    try {
      while (logEvents(text).length < 2) {
        const { done, value } = await reader.read()
        if (done) break
        text += value
      }
    } finally {
      follow.abort()
    }
    expect(logEvents(text).map((e) => e.line)).toEqual([String(LINES - 1), String(LINES)])
  })
})
