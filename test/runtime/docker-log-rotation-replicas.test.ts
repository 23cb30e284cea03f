import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import {
  containerOf,
  createLogPod,
  numberOf,
  phasedLogScript,
  phaseEnds,
  range,
} from '../support/docker-log-pods.js'
import { removeWorkloadContainers } from '../support/engine-forwarder.js'
import { logEvents } from '../support/http.js'
import { callPlatform, otherAccountKey, testConfig, type CallInit } from '../support/platform.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until } from '../support/until.js'

/**
 * A pod's log resumed through another replica after Docker's log rotation (docs/runtime.md,
 * "Across replicas"): two replicas on one PostgreSQL database and this machine's engine, a
 * member reading over HTTP. The replica a client resumes through never read the lines Docker
 * deleted, yet numbers the lines kept as the replica that did: the log numbers are in the
 * database. Needs PODYARD_TEST_POSTGRES_URL and PODYARD_TEST_DOCKER=1.
 */
const postgresUrl = process.env[POSTGRES_URL_ENV]
const enabled = Boolean(postgresUrl) && process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) {
  console.log(
    `docker log rotation across replicas skipped: set ${POSTGRES_URL_ENV} and PODYARD_TEST_DOCKER=1`,
  )
}

/** 1 MiB of log: two json-file files of about 970 lines each; phases 1..3 make Docker rotate. */
const PHASES = [1500, 1000, 700, 700]
const ENDS = phaseEnds(PHASES)

describe.runIf(enabled)('resuming a docker pod log through another replica', () => {
  let dir: string
  let database: { url: string; drop: () => Promise<void> }
  const replicas: Platform[] = []
  let tenant: string
  let podId: string | undefined

  const read = async (replica: Platform, query: string, lastEventId?: string) => {
    const init: CallInit = {
      key: tenant,
      ...(lastEventId ? { headers: { 'last-event-id': lastEventId } } : {}),
    }
    const response = await callPlatform(
      replica.url,
      `/v2/pods/${podId}/logs?source=container&${query}`,
      init,
    )
    expect(response.status).toBe(200)
    return logEvents(await response.text())
  }
  /** Starts phase `k` and waits until Docker holds its last line (no replica reads meanwhile). */
  const runPhase = async (k: number) => {
    const container = containerOf(podId!)
    execFileSync('docker', ['exec', container, 'touch', `/tmp/go-${k}`])
    await until(
      `phase ${k} to be written`,
      async () => numberOf(execFileSync('docker', ['logs', '--tail', '1', container]).toString()),
      (n) => n === ENDS[k],
      60_000,
    )
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-log-replicas-'))
    database = await freshPostgresDatabase(postgresUrl!)
    const encryptionKey = randomBytes(32).toString('base64')
    for (const name of ['first', 'second']) {
      const dataDir = path.join(dir, name)
      mkdirSync(path.join(dataDir, '.podyard'), { recursive: true })
      const config = testConfig(dataDir, {
        fleet: 'none',
        driver: 'docker',
        storeUrl: database.url,
        cluster: { leaseTtlMs: 1_500, syncIntervalMs: 200 },
        encryptionKey,
        workloadLogs: { maxMb: 1 },
        // This engine (overlay2 on ext4) cannot size a container's disk; the log is the point.
        containment: { acceptUnenforced: ['disk'] },
      })
      replicas.push(await startPlatform(config, { logger: pino({ level: 'silent' }) }))
    }
    tenant = await otherAccountKey(replicas[0]!, 'log-replicas@example.com')
  }, 120_000)

  afterAll(async () => {
    for (const replica of replicas.reverse()) await replica.close()
    if (podId) await removeWorkloadContainers([podId])
    await database?.drop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('numbers the lines kept as the replica that read the deleted ones, both ways', async () => {
    const [first, second] = replicas as [Platform, Platform]
    podId = await createLogPod(
      { call: (p, init) => callPlatform(first.url, p, init) },
      tenant,
      'log-replicas',
      `exec node -e '${phasedLogScript(PHASES)}'`,
    )
    const seen = await until(
      'the first phase, read through the first replica',
      () => read(first, 'follow=false&tail=5000'),
      (events) => numberOf(events.at(-1)?.line ?? '') === ENDS[0],
      120_000,
    )
    expect(seen.map((e) => numberOf(e.line))).toEqual(range(1, ENDS[0]!))

    // Docker deletes its older file (the first ~970 lines); the second replica, which never
    // read them, resumes after the last line the client saw through the first.
    await runPhase(1)
    const resumed = await read(second, 'follow=false', seen.at(-1)!.id)
    expect(resumed.map((e) => numberOf(e.line))).toEqual(range(ENDS[0]! + 1, ENDS[1]!))

    // A phase read through the second alone, then one nobody reads: Docker has deleted all the
    // first replica knew of; the client resumes through it as the second numbered, nothing lost.
    await runPhase(2)
    const throughSecond = await read(second, 'follow=false', resumed.at(-1)!.id)
    expect(throughSecond.map((e) => numberOf(e.line))).toEqual(range(ENDS[1]! + 1, ENDS[2]!))
    await runPhase(3)
    const back = await read(first, 'follow=false', throughSecond.at(-1)!.id)
    expect(back.map((e) => numberOf(e.line))).toEqual(range(ENDS[2]! + 1, ENDS[3]!))
  }, 300_000)
})
