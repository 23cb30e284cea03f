import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogPod } from '../support/docker-log-pods.js'
import {
  engineForwarder,
  removeWorkloadContainers,
  type EngineForwarder,
} from '../support/engine-forwarder.js'
import { logEvents } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * A follower of a running pod's log on the docker driver (PODYARD_TEST_DOCKER=1) keeps getting
 * its lines when the engine ends the follow under it: here every connection to the engine is
 * dropped (as a remote engine's network would, or the engine itself at a log rotation under a
 * slow reader), or the engine stops sending a follow while keeping it open (its json-file
 * reader stalled after a rotation). The platform follows again from the last line sent: none
 * is lost or repeated.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker log re-follow tests skipped: set PODYARD_TEST_DOCKER=1')

/** Prints 1, 2, 3, ... one line every 20 ms. */
const COUNTER = 'i=0; while :; do i=$((i+1)); echo $i; sleep 0.02; done'

describe.runIf(enabled)('following a docker pod whose engine connection drops', () => {
  let dir: string
  let forwarder: EngineForwarder
  let platform: TestPlatform
  let tenant: string
  let podId: string | undefined
  let partial: string | undefined

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-refollow-'))
    const socketPath = path.join(dir, 'engine.sock')
    forwarder = await engineForwarder(socketPath)
    platform = await startTestPlatform({
      fleet: 'none',
      driver: 'docker',
      docker: { socketPath, diskLimit: false },
      // This engine (overlay2 on ext4) cannot size a container's disk.
      containment: { acceptUnenforced: ['disk'] },
    })
    tenant = await otherAccountKey(platform, 'docker-refollow@example.com')
    podId = await createLogPod(platform, tenant, 'counter', COUNTER)
  }, 120_000)

  afterAll(async () => {
    await platform?.close()
    await removeWorkloadContainers([podId, partial].filter((id) => id !== undefined))
    await forwarder?.lose()
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  /**
   * Follows the pod's log from its newest line until `count` lines came, calling `meanwhile`
   * with how many came so far after each chunk; the numbers of the lines.
   */
  async function follow(count: number, meanwhile: (received: number) => void): Promise<number[]> {
    const response = await platform.call(
      `/v2/pods/${podId}/logs?source=container&follow=true&tail=1`,
      { key: tenant, signal: AbortSignal.timeout(60_000) },
    )
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    const numbers: number[] = []
    let pending = ''
    try {
      while (numbers.length < count) {
        const { value, done } = await reader.read()
        if (done) break
        pending += decoder.decode(value, { stream: true })
        const blocks = pending.split('\n\n')
        pending = blocks.pop()!
        for (const event of logEvents(blocks.join('\n\n') + '\n\n'))
          numbers.push(Number(event.line))
        meanwhile(numbers.length)
      }
    } finally {
      await reader.cancel().catch(() => undefined)
    }
    return numbers
  }

  function expectConsecutive(numbers: number[], count: number): void {
    expect(numbers.length).toBeGreaterThanOrEqual(count)
    const first = numbers[0]!
    expect(numbers).toEqual(numbers.map((_, i) => first + i))
  }

  it('goes on after the last line sent, with no line lost or twice', async () => {
    let dropped = 0
    const numbers = await follow(150, (received) => {
      // Twice, once the follow is well under way.
      if (dropped === 0 && received >= 20) dropped += forwarder.cut()
      if (dropped === 1 && received >= 60) dropped += forwarder.cut()
    })
    expect(dropped).toBeGreaterThanOrEqual(2)
    expectConsecutive(numbers, 150)
  }, 90_000)

  it('notices a follow the engine stopped sending without closing it, and follows again', async () => {
    // The engine's json-file reader can stall after a rotation with the connection open.
    let frozen = 0
    const numbers = await follow(300, (received) => {
      if (frozen === 0 && received >= 20) frozen += forwarder.freeze(/\/logs\?.*follow=(1|true)/)
    })
    expect(frozen).toBe(1)
    // 300 lines take 6 s or more at one per 20 ms: the follow was silent for some of them.
    expectConsecutive(numbers, 300)
  }, 90_000)

  it("leaves a follow alone while the log's newest entry ends no line (a progress bar)", async () => {
    // The machine runs one such pod at a time: the counter's goes first.
    const deleted = await platform.call(`/v2/pods/${podId}`, { method: 'DELETE', key: tenant })
    expect(deleted.status).toBe(204)
    // 20 000 bytes without a newline: Docker logs the first 16 KiB as an entry of its own.
    partial = await createLogPod(
      platform,
      tenant,
      'partial',
      "head -c 20000 /dev/zero | tr '\\0' x; exec sleep 600",
    )
    const read = async () =>
      logEvents(
        await (
          await platform.call(`/v2/pods/${partial}/logs?source=container&follow=false`, {
            key: tenant,
          })
        ).text(),
      )
    await expect.poll(async () => (await read()).at(-1)?.line.length ?? 0).toBeGreaterThan(16_000)
    const follows = /\/logs\?.*follow=(1|true)/
    const before = forwarder.seen(follows)
    const response = await platform.call(`/v2/pods/${partial}/logs?source=container&follow=true`, {
      key: tenant,
    })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const reading = (async () => {
      while (!(await reader.read().catch(() => ({ done: true }))).done) {
        // the entry, held back until its line ends
      }
    })()
    // Long enough for two stall checks and a follow again (2 s of silence, then 2 s more).
    await new Promise((resolve) => setTimeout(resolve, 9_000))
    await reader.cancel().catch(() => undefined)
    await reading
    expect(forwarder.seen(follows) - before).toBe(1)
    await platform.call(`/v2/pods/${partial}`, { method: 'DELETE', key: tenant })
  }, 60_000)
})
