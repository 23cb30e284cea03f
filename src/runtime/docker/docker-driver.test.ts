import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import type { LogLine, WorkloadSpec } from '../driver.js'
import { DockerDriver } from './docker-driver.js'

/**
 * What the conformance suite cannot check on Docker (it reads the container disk from the host,
 * and the container disk here is the writable layer): following, adoption and isolation from
 * other servers' containers. Needs a Docker engine and the conformance images
 * (test/support/docker-test-images.sh); skipped without PODYARD_TEST_DOCKER=1.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker driver tests skipped: set PODYARD_TEST_DOCKER=1 (needs dockerd)')

const IMAGE = 'podyard-conformance/plain:1'

describe.skipIf(!enabled)('DockerDriver against a Docker engine', () => {
  const serverId = `unit-${process.pid}`
  const drivers: DockerDriver[] = []
  const ids: string[] = []
  let counter = 0

  function open(id = serverId): DockerDriver {
    const driver = new DockerDriver({ serverId: id })
    drivers.push(driver)
    return driver
  }

  function makeSpec(command: string): WorkloadSpec {
    const id = `dd-${process.pid}-${++counter}`
    ids.push(id)
    return {
      id,
      image: IMAGE,
      command,
      env: {},
      containerDiskPath: '/nonexistent',
      diskGb: 1,
      mounts: [],
      ports: [],
      gpuIndices: [],
      vcpus: 1,
      memoryGb: 1,
      labels: { test: 'docker-driver' },
    }
  }

  afterEach(async () => {
    for (const driver of drivers.splice(0)) {
      for (const id of ids) await driver.remove(id)
      await driver.close()
    }
    ids.length = 0
  })

  async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
    for (let i = 0; i < 400; i++) {
      const value = await probe()
      if (value !== undefined) return value
      await sleep(25)
    }
    throw new Error('timed out')
  }

  it('follows lines as they are written and stops promptly when aborted', async () => {
    const driver = open()
    const spec = makeSpec('echo before; sleep 1; echo after-1; echo after-2; exec sleep 300')
    await driver.start(spec)
    const abort = new AbortController()
    const follow = driver.followLogs(spec.id, 0, abort.signal)[Symbol.asyncIterator]()
    const seen: LogLine[] = []
    for (let i = 0; i < 3; i++) seen.push((await follow.next()).value as LogLine)
    expect(seen.map((l) => [l.seq, l.line])).toEqual([
      [1, 'before'],
      [2, 'after-1'],
      [3, 'after-2'],
    ])
    abort.abort()
    const began = Date.now()
    expect((await follow.next()).done).toBe(true)
    expect(Date.now() - began).toBeLessThan(2000)
  })

  it('lets a new driver adopt a workload: same state, same log numbers, exit code', async () => {
    const first = open()
    const spec = makeSpec('echo from-a; sleep 1; echo from-b; exit 7')
    const started = await first.start(spec)
    await first.close()
    const successor = open()
    expect(await successor.inspect(spec.id)).toEqual(started)
    const state = await waitFor(async () => {
      const s = await successor.inspect(spec.id)
      return s?.phase === 'exited' ? s : undefined
    })
    expect(state).toMatchObject({ exitCode: 7, startedAt: started.startedAt })
    expect((await successor.readLogs(spec.id)).map((l) => [l.seq, l.line])).toEqual([
      [1, 'from-a'],
      [2, 'from-b'],
    ])
  })

  it("never sees or touches another server's containers", async () => {
    const ours = open()
    const theirs = open(`${serverId}-other`)
    const spec = makeSpec('exec sleep 300')
    await theirs.start(spec)
    expect(await ours.inspect(spec.id)).toBeUndefined()
    expect((await ours.list()).map((s) => s.id)).not.toContain(spec.id)
    await ours.stop(spec.id, { graceMs: 0 })
    await ours.remove(spec.id)
    expect((await theirs.inspect(spec.id))?.phase).toBe('running')
    // And the same id may run for both servers at once.
    await ours.start(spec)
    expect((await ours.inspect(spec.id))?.phase).toBe('running')
  })

  it('fails to start an image that is absent and cannot be pulled, leaving nothing', async () => {
    const driver = open()
    const spec = { ...makeSpec('true'), image: 'podyard-conformance/absent:1' }
    await expect(driver.start(spec)).rejects.toThrow()
    expect(await driver.inspect(spec.id)).toBeUndefined()
  })
})
