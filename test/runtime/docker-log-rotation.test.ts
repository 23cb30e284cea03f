import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  containerOf,
  createLogPod,
  numberOf,
  phasedLogScript,
  phaseEnds,
  range,
  startDockerLogPlatform,
} from '../support/docker-log-pods.js'
import { removeWorkloadContainers } from '../support/engine-forwarder.js'
import { logEvents } from '../support/http.js'
import type { TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * Resuming a pod's log across Docker's log rotation (PODYARD_TEST_DOCKER=1), over HTTP as a
 * member account. A pod with a 1 MiB log budget (two json-file files of 512 KiB, about 970
 * of its lines each) writes numbered lines in phases; between them the client reads and later
 * resumes with Last-Event-ID. A resume gets exactly the lines after the last one it saw while
 * Docker still keeps it, and a note saying how many were lost where Docker deleted some.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker log rotation tests skipped: set PODYARD_TEST_DOCKER=1')

/** Lines written by each phase; a phase starts when the test makes /tmp/go-<phase>. */
const PHASES = [1500, 1000, 700, 700, 700, 3000]
const ENDS = phaseEnds(PHASES)
const SCRIPT = phasedLogScript(PHASES)

describe.runIf(enabled)('resuming a docker pod log across rotation', () => {
  let platform: TestPlatform
  let tenant: string
  let podId: string

  const read = async (query: string, lastEventId?: string) => {
    const response = await platform.call(`/v2/pods/${podId}/logs?source=container&${query}`, {
      key: tenant,
      ...(lastEventId ? { headers: { 'last-event-id': lastEventId } } : {}),
    })
    expect(response.status).toBe(200)
    return logEvents(await response.text())
  }
  /** Starts phase `k` and waits (reading the tail) until its last line is in the log. */
  const runPhase = async (k: number) => {
    execFileSync('docker', ['exec', containerOf(podId), 'touch', `/tmp/go-${k}`])
    await until(
      `phase ${k} to be written`,
      async () => numberOf((await read('follow=false&tail=1')).at(-1)?.line ?? ''),
      (n) => n === ENDS[k],
      60_000,
    )
  }

  beforeAll(async () => {
    ;({ platform, tenant } = await startDockerLogPlatform(1, 'docker-log-rotation@example.com'))
  }, 120_000)

  afterAll(async () => {
    await platform?.close()
    if (podId) await removeWorkloadContainers([podId])
  }, 60_000)

  it('resumes after the last line seen, or says how many lines Docker deleted', async () => {
    podId = await createLogPod(platform, tenant, 'log-rotation', `exec node -e '${SCRIPT}'`)
    await until(
      'the first phase',
      async () => numberOf((await read('follow=false&tail=1')).at(-1)?.line ?? ''),
      (n) => n === ENDS[0],
      120_000,
    )
    const seen = await read('follow=false&tail=5000')
    expect(seen.map((e) => numberOf(e.line))).toEqual(range(1, ENDS[0]!))

    // Docker deletes its older file (the first ~970 lines); the line last seen is still kept.
    await runPhase(1)
    const resumed = await read('follow=false', seen.at(-1)!.id)
    expect(resumed.map((e) => numberOf(e.line))).toEqual(range(ENDS[0]! + 1, ENDS[1]!))

    // Three phases, each read by the platform before the next: every line was numbered when
    // Docker deleted it, so the note counts exactly those the client never saw.
    for (const k of [2, 3, 4]) await runPhase(k)
    const afterLoss = await read('follow=false', resumed.at(-1)!.id)
    const note = /^\[podyard\] (\d+) log lines were lost here/.exec(afterLoss[0]!.line)
    expect(note, afterLoss[0]!.line).not.toBeNull()
    const lost = Number(note![1])
    expect(lost).toBeGreaterThan(0)
    expect(afterLoss.slice(1).map((e) => numberOf(e.line))).toEqual(
      range(ENDS[1]! + lost + 1, ENDS[4]!),
    )

    // A phase of more than the budget that nobody reads: the note says lines were lost, not
    // how many, and the lines Docker keeps follow in order, each once.
    execFileSync('docker', ['exec', containerOf(podId), 'touch', '/tmp/go-5'])
    await new Promise((resolve) => setTimeout(resolve, 3000))
    const afterUnread = await until(
      'the last phase',
      () => read('follow=false', afterLoss.at(-1)!.id),
      (events) => numberOf(events.at(-1)?.line ?? '') === ENDS[5],
      60_000,
    )
    expect(afterUnread[0]!.line).toMatch(/^\[podyard\] log lines were lost here.*not known$/)
    const kept = afterUnread.slice(1).map((e) => numberOf(e.line))
    expect(kept[0]).toBeGreaterThan(ENDS[4]! + 1)
    expect(kept).toEqual(range(kept[0]!, ENDS[5]!))
  }, 300_000)
})
