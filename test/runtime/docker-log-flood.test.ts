import { execFileSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { containerOf, createLogPod, startDockerLogPlatform } from '../support/docker-log-pods.js'
import { removeWorkloadContainers } from '../support/engine-forwarder.js'
import { logEvents, type LogEvent } from '../support/http.js'
import type { TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * A log flood on the docker driver (PODYARD_TEST_DOCKER=1), over HTTP as a member account: a
 * pod writes 200 MB of log as fast as the engine takes it, far past its log budget. The
 * engine's log files stay within the budget (json-file `max-size` and `max-file`), the logs
 * route answers 200 with the newest lines during the flood and after it, a follower sees the
 * end, and the server's memory grows by a small part of what was written, not by the log.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker log flood tests skipped: set PODYARD_TEST_DOCKER=1')

const MIB = 1024 * 1024
/** 200 000 lines of about 1 KB: 200 MB. */
const LINES = 200_000
const LINE_PADDING = 1000
/** workloadLogs.maxMb: two json-file files of 8 MiB. */
const LOG_CAP_MB = 16
/** Docker checks a file's size after each write: each may pass max-size by one line. */
const LOG_SLACK_BYTES = 2 * 4096
/** What the server's Buffer memory may grow by while the pod floods and is read. */
const MAX_BUFFER_GROWTH = 48 * MIB

/** Writes LINES numbered lines (`<n> xxx…`), then `flood-done`, then idles. */
const FLOOD_SCRIPT = [
  `const pad = "x".repeat(${LINE_PADDING})`,
  `for (let i = 1; i <= ${LINES}; ) {`,
  '  let chunk = ""',
  `  for (let k = 0; k < 256 && i <= ${LINES}; k++, i++) chunk += i + " " + pad + "\\n"`,
  '  require("fs").writeSync(1, chunk)',
  '}',
  'require("fs").writeSync(1, "flood-done\\n")',
  'setInterval(() => {}, 1 << 30)',
].join('\n')

/** The seq of an event (its id is `<time>/<seq>`). */
const seqOf = (event: LogEvent) => Number(event.id.split('/')[1])

/** The number a flood line starts with (NaN for other lines). */
const numberOf = (line: string) => Number(line.split(' ')[0])

/** Bytes of the container's log files in the engine's data root. */
function engineLogBytes(podId: string): number {
  const logPath = execFileSync('docker', ['inspect', '-f', '{{.LogPath}}', containerOf(podId)], {
    encoding: 'utf8',
  }).trim()
  const dir = path.dirname(logPath)
  return readdirSync(dir)
    .filter((name) => name.startsWith(path.basename(logPath)))
    .reduce((sum, name) => sum + statSync(path.join(dir, name)).size, 0)
}

describe.runIf(enabled)('a log flood on the docker driver', () => {
  let platform: TestPlatform
  let tenant: string
  let podId: string

  const read = async (query: string) =>
    platform.call(`/v2/pods/${podId}/logs?source=container&${query}`, { key: tenant })

  beforeAll(async () => {
    ;({ platform, tenant } = await startDockerLogPlatform(
      LOG_CAP_MB,
      'docker-log-flood@example.com',
    ))
  }, 120_000)

  afterAll(async () => {
    await platform?.close()
    if (podId) await removeWorkloadContainers([podId])
  }, 60_000)

  it('keeps the log to its budget and answers its newest lines, without holding it', async () => {
    const before = process.memoryUsage().arrayBuffers
    let peak = before
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers)
    }, 5)
    try {
      podId = await createLogPod(platform, tenant, 'log-flood', `exec node -e '${FLOOD_SCRIPT}'`)

      // A follower from the flood's first lines on: it takes lines as they come and must see
      // the flood's end (given up a minute after the flood ended, as a failure).
      await until(
        'the flood to begin',
        async () => logEvents(await (await read('follow=false&tail=1')).text()),
        (lines) => lines.length > 0,
        120_000,
      )
      const givenUp = new AbortController()
      const follower = (async () => {
        const response = await platform.call(
          `/v2/pods/${podId}/logs?source=container&follow=true&tail=1`,
          { key: tenant, signal: givenUp.signal },
        )
        expect(response.status).toBe(200)
        const reader = response.body!.getReader()
        givenUp.signal.addEventListener('abort', () => void reader.cancel().catch(() => {}))
        const decoder = new TextDecoder()
        let pending = ''
        let last = 0
        let lastSeq = 0
        let disordered = 0
        // What a failure shows: the first lines out of order, with the line before each.
        const seen: string[] = []
        for (;;) {
          const { value, done } = await reader
            .read()
            .catch(() => ({ value: undefined, done: true }))
          if (done || !value) return { ended: false, last, disordered, seen }
          pending += decoder.decode(value, { stream: true })
          const blocks = pending.split('\n\n')
          pending = blocks.pop()!
          for (const event of logEvents(blocks.join('\n\n') + '\n\n')) {
            if (event.line === 'flood-done') {
              await reader.cancel()
              return { ended: true, last, disordered, seen }
            }
            const n = numberOf(event.line)
            if (Number.isFinite(n)) {
              if (n <= last) {
                disordered++
                if (seen.length < 5)
                  seen.push(`line ${n} (seq ${seqOf(event)}) after line ${last} (seq ${lastSeq})`)
              }
              last = n
              lastSeq = seqOf(event)
            }
          }
        }
      })()

      // Reads of the tail during the flood, while the engine rotates the files under them.
      const statuses: number[] = []
      const { lines } = await until(
        'the flood to end',
        async () => {
          const response = await read('follow=false&tail=2')
          statuses.push(response.status)
          return { lines: response.status === 200 ? logEvents(await response.text()) : [] }
        },
        ({ lines }) => lines.at(-1)?.line === 'flood-done',
        240_000,
      )
      expect(statuses.filter((status) => status !== 200)).toEqual([])
      expect(numberOf(lines[0]!.line)).toBe(LINES)

      const giveUp = setTimeout(() => givenUp.abort(), 60_000)
      const followed = await follower.finally(() => clearTimeout(giveUp))
      expect(followed).toEqual({ ended: true, last: LINES, disordered: 0, seen: [] })

      const tail = logEvents(await (await read('follow=false&tail=1000')).text())
      expect(tail.map((e) => e.line).at(-1)).toBe('flood-done')
      expect(tail.slice(0, -1).map((e) => numberOf(e.line))).toEqual(
        Array.from({ length: 999 }, (_, k) => LINES - 998 + k),
      )
      // Numbered in order, one apart.
      expect(tail.every((e, k) => k === 0 || seqOf(e) === seqOf(tail[k - 1]!) + 1)).toBe(true)
    } finally {
      clearInterval(sampler)
    }

    const onDisk = engineLogBytes(podId)
    const growth = peak - before
    console.log(
      `docker log flood: ${LINES} lines (${((LINES * (LINE_PADDING + 8)) / MIB).toFixed(0)} MiB) ` +
        `written; ${(onDisk / MIB).toFixed(1)} MiB kept by the engine; ` +
        `the server's Buffer memory peaked ${(growth / MIB).toFixed(1)} MiB above its start`,
    )
    expect(onDisk).toBeLessThanOrEqual(LOG_CAP_MB * MIB + LOG_SLACK_BYTES)
    expect(growth).toBeLessThan(MAX_BUFFER_GROWTH)
  }, 300_000)
})
