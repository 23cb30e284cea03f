import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { callPlatform, otherAccountKey, testConfig, type CallInit } from '../support/platform.js'
import {
  boundedProcessPods,
  FILL_TEN_GB_VOLUME,
  GIB,
  LIST_VOLUME,
  loopsUnder,
  mountsAtOrUnder,
} from '../support/disk-bounds-probe.js'
import { podLog } from '../support/http.js'
import { until } from '../support/until.js'

/**
 * A member's network volume on the process driver with bubblewrap, on this machine's own
 * storage: a pod that writes past the volume's size gets ENOSPC inside it, the host holds no
 * more than the volume's image, a second pod on the same volume sees the files (one mount,
 * shared), and deleting the volume takes its image and mount with it.
 */

const { canBound } = await boundedProcessPods('process network volume bounds')

interface Json {
  id: string
  status?: string
}

async function json<T = Json>(response: Response, status = 200): Promise<T> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  return (text ? JSON.parse(text) : undefined) as T
}

describe.runIf(canBound)("a member's network volume on this machine (process driver)", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-netvolume-'))
  const config = testConfig(dataDir, { sandbox: 'bubblewrap' })
  const volumesDir = path.join(config.dataDir, 'volumes')
  let platform: Platform | undefined
  let member = ''
  const call = (p: string, init: CallInit = {}) =>
    callPlatform(platform!.url, p, { key: member, ...init })

  const createPod = async (name: string, volumeId: string, args: string) =>
    (
      await json(
        await call('/v2/pods', {
          method: 'POST',
          json: {
            name,
            image: 'ubuntu',
            cpu: { id: 'cpu3c', vcpuCount: 2 },
            dataCenterIds: ['US-KS-2'],
            mounts: { network: [{ volumeId, path: '/runpod-volume' }] },
            args,
          },
        }),
        201,
      )
    ).id

  const logUntil = (id: string, marker: (line: string) => boolean) =>
    until(
      `pod ${id} to log its marker`,
      () => podLog(call, id),
      (log) => log.some(marker),
      120_000,
    )

  beforeAll(async () => {
    platform = await startPlatform(config, { logger: pino({ level: 'silent' }) })
    member = await otherAccountKey(platform, 'volume-filler@example.com')
  }, 60_000)

  afterAll(async () => {
    await platform?.closeWithWorkloads()
    for (const mountPoint of mountsAtOrUnder(dataDir).reverse()) {
      execFileSync('umount', ['-l', mountPoint])
    }
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it('stops writes at its size, shares one mount, and goes with its image', async () => {
    const volume = await json(
      await call('/v2/network-volumes', {
        method: 'POST',
        json: { name: 'bounded', size: 10, dataCenterId: 'US-KS-2' },
      }),
      201,
    )
    const volumeDir = path.join(volumesDir, volume.id)
    const filler = await createPod('filler', volume.id, FILL_TEN_GB_VOLUME)
    const text = (await logUntil(filler, (l) => l === 'filled')).join('\n')
    expect(text).toMatch(/fallocate: fallocate failed: No space left on device/)
    expect(text).toContain('fallocate 11G exit 1')
    expect(text).toContain('fallocate 9G exit 0')
    expect(text).toMatch(/dd: error writing '\/runpod-volume\/rest': No space left on device/)
    expect(text).toContain('dd exit 1')

    // The host holds the image: the volume's size, of which what was written (reserved blocks
    // are not written into the sparse image).
    const image = statSync(`${volumeDir}.ext4`)
    expect(image.size).toBe(10 * GIB)
    expect(image.blocks * 512).toBeLessThanOrEqual(2.1 * GIB)

    // A second pod on the volume while the first runs: the same files, through the same mount.
    const reader = await createPod('reader', volume.id, LIST_VOLUME)
    const listed = await logUntil(reader, (l) => l.startsWith('volume holds: '))
    expect(listed.find((l) => l.startsWith('volume holds: '))).toBe(
      'volume holds: from-a most rest ',
    )
    expect(mountsAtOrUnder(volumesDir)).toEqual([volumeDir])
    expect(loopsUnder(volumesDir)).toHaveLength(1)

    // Terminating the pods leaves the volume (its image and files), mounted while one uses
    // it; deleting the volume takes them.
    expect((await call(`/v2/pods/${filler}`, { method: 'DELETE' })).status).toBe(204)
    expect(mountsAtOrUnder(volumesDir)).toEqual([volumeDir])
    expect((await call(`/v2/pods/${reader}`, { method: 'DELETE' })).status).toBe(204)
    await until(
      'the volume to be unmounted with its last pod',
      async () => mountsAtOrUnder(volumesDir),
      (mounts) => mounts.length === 0,
      30_000,
    )
    expect(existsSync(`${volumeDir}.ext4`)).toBe(true)
    await until(
      'the volume to be deletable',
      async () => (await call(`/v2/network-volumes/${volume.id}`, { method: 'DELETE' })).status,
      (status) => status === 204,
      30_000,
    )
    expect(existsSync(`${volumeDir}.ext4`)).toBe(false)
    expect(existsSync(volumeDir)).toBe(false)
    expect(mountsAtOrUnder(volumesDir)).toEqual([])
    await until(
      'its loop device to be detached',
      async () => loopsUnder(volumesDir),
      (loops) => loops.length === 0,
      10_000,
    )
  }, 240_000)
})
