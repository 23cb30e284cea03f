import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { logEvents } from '../support/http.js'
import { createLogPod, startDockerLogPlatform } from '../support/docker-log-pods.js'
import type { TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * Reading a big container log on the docker driver (PODYARD_TEST_DOCKER=1), over HTTP as a
 * member account: `tail=N` answers the newest lines, numbered from the start of the log, and
 * the server holds only what it reads a chunk at a time, not the retained log (dockerode
 * answers a log request that does not follow with its whole body in one Buffer).
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker log read tests skipped: set PODYARD_TEST_DOCKER=1')

const MIB = 1024 * 1024
/** 300 000 numbered lines: about 14 MB as Docker sends them back (frame, time, text). */
const LINES = 300_000
/** Room for the whole log in Docker's json-file (about 23 MB), so none of it is rotated away. */
const LOG_CAP_MB = 64
/** Reads made at once: the old code held the whole log once for each. */
const READERS = 4
/** What the reads may add to the server's Buffer memory: a few chunks each, not the log. */
const MAX_BUFFER_GROWTH = 16 * MIB

describe.runIf(enabled)('a big container log on the docker driver', () => {
  let platform: TestPlatform
  let tenant: string
  let podId: string

  const tail = async (n: number) => {
    const response = await platform.call(
      `/v2/pods/${podId}/logs?follow=false&source=container&tail=${n}`,
      { key: tenant },
    )
    expect(response.status).toBe(200)
    return logEvents(await response.text())
  }

  beforeAll(async () => {
    ;({ platform, tenant } = await startDockerLogPlatform(LOG_CAP_MB, 'docker-big-log@example.com'))
    podId = await createLogPod(platform, tenant, 'big-log', `seq 1 ${LINES}; exec sleep 300`)
    await until(
      'the last line in the log',
      async () => (await tail(1)).map((e) => e.line),
      (lines) => lines[0] === String(LINES),
      120_000,
    )
  }, 180_000)

  afterAll(() => platform?.close(), 60_000)

  it('answers tail=N with the newest lines, numbered from the start of the log', async () => {
    const three = await tail(3)
    expect(three.map((e) => e.line)).toEqual(['299998', '299999', '300000'])
    // Event ids are `<ts>/<seq>`: the seq of line k is k (the image was there, no pull lines).
    expect(three.map((e) => Number(e.id.split('/')[1]))).toEqual([299_998, 299_999, 300_000])
    const most = await tail(5000)
    expect(most.map((e) => Number(e.line))).toEqual(
      Array.from({ length: 5000 }, (_, k) => LINES - 4999 + k),
    )
  }, 60_000)

  it("reads the tail without holding the log in the server's memory", async () => {
    const before = process.memoryUsage().arrayBuffers
    let peak = before
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers)
    }, 2)
    try {
      const answers = await Promise.all(Array.from({ length: READERS }, () => tail(2)))
      for (const lines of answers) expect(lines.map((e) => e.line)).toEqual(['299999', '300000'])
    } finally {
      clearInterval(sampler)
    }
    const growth = peak - before
    console.log(
      `Buffer memory during ${READERS} reads of tail=2 of a ${LINES}-line log: ` +
        `${(before / MIB).toFixed(1)} MiB before, peak +${(growth / MIB).toFixed(1)} MiB`,
    )
    expect(growth).toBeLessThan(MAX_BUFFER_GROWTH)
  }, 120_000)
})
