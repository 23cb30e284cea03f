import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogPod, removePodContainer } from './support/docker-log-pods.js'
import { engineForwarder, type EngineForwarder } from './support/engine-forwarder.js'
import { logEvents } from './support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from './support/platform.js'

/**
 * A follower of a running pod's log on the docker driver (PODYARD_TEST_DOCKER=1) keeps getting
 * its lines when the engine ends the follow under it: here every connection to the engine is
 * dropped (as a remote engine's network would, or the engine itself at a log rotation under a
 * slow reader). The platform follows again from the last line sent: none is lost or repeated.
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
  }, 120_000)

  afterAll(async () => {
    await platform?.close()
    if (podId) removePodContainer(podId)
    await forwarder?.lose()
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('goes on after the last line sent, with no line lost or twice', async () => {
    podId = await createLogPod(platform, tenant, 'counter', COUNTER)
    const response = await platform.call(
      `/v2/pods/${podId}/logs?source=container&follow=true&tail=1`,
      { key: tenant, signal: AbortSignal.timeout(60_000) },
    )
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    const numbers: number[] = []
    let pending = ''
    let dropped = 0
    try {
      while ((numbers.at(-1) ?? 0) < 150) {
        const { value, done } = await reader.read()
        if (done) break
        pending += decoder.decode(value, { stream: true })
        const blocks = pending.split('\n\n')
        pending = blocks.pop()!
        for (const event of logEvents(blocks.join('\n\n') + '\n\n'))
          numbers.push(Number(event.line))
        // Twice, once the follow is well under way.
        if (dropped === 0 && numbers.length >= 20) dropped += forwarder.cut()
        if (dropped === 1 && numbers.length >= 60) dropped += forwarder.cut()
      }
    } finally {
      await reader.cancel().catch(() => undefined)
    }
    expect(dropped).toBeGreaterThanOrEqual(2)
    expect(numbers.at(-1)).toBeGreaterThanOrEqual(150)
    const first = numbers[0]!
    expect(numbers).toEqual(numbers.map((_, i) => first + i))
  }, 90_000)
})
