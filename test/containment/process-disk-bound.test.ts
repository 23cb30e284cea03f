import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import {
  callPlatform,
  otherAccountKey,
  startTestPlatform,
  testConfig,
  type CallInit,
  type TestPlatform,
} from '../support/platform.js'
import { boundedProcessPods, GIB, loopsUnder } from '../support/disk-bounds-probe.js'
import { until } from '../support/until.js'
import { podLog } from '../support/http.js'

/**
 * A member's pod on the process driver with bubblewrap that writes past its container disk and
 * its volume (the report that motivated disk bounds: 3 GB written into a pod created with
 * `disk: 1`, nothing limited). Each disk is an ext4 image on a loop device of its rented size:
 * the writes fail with ENOSPC inside the pod, the host holds at most what the bounds allow,
 * and the mounts and images go with the pod, across a server that stops without its workloads.
 */

const { canBound, bubblewrapOk } = await boundedProcessPods('process disk bounds: bounded pods')

/** What `look` finds, once it finds something (every 100 ms, up to `timeoutMs`). */
async function waitFor<T>(
  what: string,
  look: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  return (await until(what, look, (value) => value !== undefined, timeoutMs)) as T
}

interface PodJson {
  id: string
  desiredStatus: string
  status?: string
  statusReason?: string | null
}

async function json<T>(response: Response, status = 200): Promise<T> {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  return JSON.parse(text) as T
}

/** The mounts under `dir` on this host (mount point and device). */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint.startsWith(`${dir}/`))
}

/** The loop devices of images under `dir`: whether they use direct I/O, and their writeback bdi. */
function pacingUnder(dir: string): ReturnType<typeof bdiOf>[] {
  const { loopdevices } = JSON.parse(
    execFileSync('losetup', ['-J', '-l', '-O', 'NAME,BACK-FILE,DIO,MAJ:MIN'], { encoding: 'utf8' }),
  ) as {
    loopdevices: { name: string; 'back-file': string; dio: boolean | string; 'maj:min': string }[]
  }
  return loopdevices
    .filter((loop) => loop['back-file'].startsWith(`${dir}/`))
    .map((loop) => bdiOf(loop.name, loop['maj:min'], loop.dio === true || loop.dio === '1'))
}

function bdiOf(device: string, majMin: string, dio: boolean) {
  const bdi = `/sys/class/bdi/${majMin.trim()}`
  const queue = `/sys/block/${path.basename(device)}/queue`
  const read = (file: string) => readFileSync(file, 'utf8').trim()
  return {
    device,
    dio,
    strict: read(`${bdi}/strict_limit`),
    maxBytes: Number(read(`${bdi}/max_bytes`)),
    requests: Number(read(`${queue}/nr_requests`)),
    requestKb: Number(read(`${queue}/max_sectors_kb`)),
  }
}

/** Bytes the files under `dir` take on the host's disk, not counting mounted file systems. */
function hostBytesUnder(dir: string): number {
  return Number(execFileSync('du', ['-sxB1', dir], { encoding: 'utf8' }).split('\t')[0])
}

/** Leaves nothing mounted under `dir`, whatever a failed test left. */
function unmountAllUnder(dir: string): void {
  for (const mountPoint of mountsUnder(dir).reverse()) {
    execFileSync('umount', ['-l', mountPoint])
  }
}

/**
 * The pod's program: on its first start it fills its container disk (2 GB into 1 GB), then its
 * 10 GB volume (11 GB reserved at once, 9 GB reserved and 2 GB written past them); on a later
 * start it lists what its disks hold.
 */
const FILL = [
  'if [ -e /workspace/started ]; then',
  '  echo "home holds: $(ls -A $HOME | tr "\\n" " ")"',
  '  echo "volume holds: $(ls -A /workspace | tr "\\n" " ")"',
  '  exec sleep 600',
  'fi',
  'touch /workspace/started',
  'dd if=/dev/zero of=$HOME/fill bs=1M count=2048 2>&1; echo "container disk dd exit $?"',
  'fallocate -l 11G /workspace/too-big 2>&1; echo "volume fallocate 11G exit $?"',
  // ext4 keeps what a failed fallocate reserved.
  'rm -f /workspace/too-big',
  'fallocate -l 9G /workspace/most && echo "volume fallocate 9G exit $?"',
  'dd if=/dev/zero of=/workspace/rest bs=1M count=2048 2>&1; echo "volume dd exit $?"',
  'echo filled',
  'exec sleep 600',
].join('\n')

describe.runIf(canBound)("a member's pod that writes past its disks (process driver)", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-diskbound-'))
  const config = testConfig(dataDir, { sandbox: 'bubblewrap' })
  let platform: Platform | undefined
  let member = ''
  let podId = ''
  const call = (p: string, init: CallInit = {}) =>
    callPlatform(platform!.url, p, { key: member, ...init })
  const start = async () => {
    platform = await startPlatform(config, { logger: pino({ level: 'silent' }) })
  }
  const waitRunning = (id: string) =>
    waitFor(
      `pod ${id} RUNNING`,
      async () => {
        const pod = await json<PodJson>(await call(`/v2/pods/${id}`))
        return pod.status === 'RUNNING' ? pod : undefined
      },
      60_000,
    )
  const podDir = () => path.join(config.dataDir, 'pods', podId)

  beforeAll(async () => {
    await start()
    member = await otherAccountKey(platform!, 'disk-filler@example.com')
  }, 60_000)

  afterAll(async () => {
    await platform?.closeWithWorkloads()
    unmountAllUnder(dataDir)
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it('gives ENOSPC inside the pod, and the host holds no more than the bounds', async () => {
    const before = hostBytesUnder(dataDir)
    const created = await json<PodJson>(
      await call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'filler',
          image: 'ubuntu',
          // A volume is a GPU pod's (CPU pods take network volumes only).
          gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
          disk: 1,
          mounts: { persistent: { size: 10, path: '/workspace' } },
          args: FILL,
        },
      }),
      201,
    )
    podId = created.id
    const lines = await waitFor(
      'the pod to have filled its disks',
      async () => {
        const log = await podLog(call, podId)
        return log.includes('filled') ? log : undefined
      },
      120_000,
    )
    const text = lines.join('\n')
    expect(text).toMatch(/dd: error writing '\/root\/fill': No space left on device/)
    expect(text).toContain('container disk dd exit 1')
    expect(text).toMatch(/fallocate: fallocate failed: No space left on device/)
    expect(text).toContain('volume fallocate 11G exit 1')
    expect(text).toContain('volume fallocate 9G exit 0')
    expect(text).toMatch(/dd: error writing '\/workspace\/rest': No space left on device/)
    expect(text).toContain('volume dd exit 1')

    // What reached the host's disk: ~1 GB of the container disk and what fit of the volume's
    // written 2 GB (reserved blocks are not written into the sparse image).
    const disk = statSync(path.join(podDir(), 'disk.ext4'))
    const volume = statSync(path.join(podDir(), 'persistent.ext4'))
    expect(disk.size).toBe(1 * GIB)
    expect(volume.size).toBe(10 * GIB)
    expect(disk.blocks * 512).toBeLessThanOrEqual(1 * GIB)
    expect(volume.blocks * 512).toBeLessThanOrEqual(2.1 * GIB)
    const grown = hostBytesUnder(dataDir) - before
    console.log(`host bytes written by a pod filling disk 1 and a 10 GB volume: ${grown}`)
    expect(grown).toBeLessThanOrEqual(3.2 * GIB)
    expect(mountsUnder(podDir()).sort()).toEqual(
      [path.join(podDir(), 'disk'), path.join(podDir(), 'persistent')].sort(),
    )
  }, 180_000)

  it('empties the container disk on start and keeps the volume', async () => {
    const act = (action: string) =>
      call(`/v2/pods/${podId}/action`, { method: 'POST', json: { action } })
    expect((await act('stop')).status).toBeLessThan(300)
    await waitFor('the pod to stop', async () => {
      const pod = await json<PodJson>(await call(`/v2/pods/${podId}`))
      return pod.status === 'EXITED' ? pod : undefined
    })
    expect((await act('start')).status).toBeLessThan(300)
    const lines = await waitFor('the restarted pod to list its disks', async () => {
      const log = await podLog(call, podId)
      return log.some((l) => l.startsWith('volume holds')) ? log : undefined
    })
    expect(lines).toContain('home holds: ')
    expect(lines.find((l) => l.startsWith('volume holds'))).toBe('volume holds: most rest started ')
  }, 60_000)

  it('keeps the mounts of a running pod across a server restart, and unmounts what no workload claims', async () => {
    // A server that crashed while making an image for a pod it never recorded left it mounted.
    const ghost = path.join(config.dataDir, 'pods', 'ghostpod', 'disk')
    mkdirSync(ghost, { recursive: true })
    writeFileSync(`${ghost}.ext4`, '')
    execFileSync('truncate', ['-s', '64M', `${ghost}.ext4`])
    execFileSync('mkfs.ext4', ['-q', '-F', `${ghost}.ext4`])
    execFileSync('mount', ['-o', 'loop', `${ghost}.ext4`, ghost])
    expect(mountsUnder(podDir())).toHaveLength(2)
    await platform!.close()
    platform = undefined
    try {
      expect(mountsUnder(podDir())).toHaveLength(2)
    } finally {
      // Its successor (which afterAll closes with the workloads, whatever happened here).
      await start()
    }
    await waitFor('the ghost image to be unmounted', async () =>
      mountsUnder(ghost).length === 0 && !mountsUnder(path.dirname(ghost)).includes(ghost)
        ? true
        : undefined,
    )
    await waitFor('its loop device to be detached', async () =>
      loopsUnder(path.dirname(ghost)).length === 0 ? true : undefined,
    )
    await waitRunning(podId)
    expect(mountsUnder(podDir()).sort()).toEqual(
      [path.join(podDir(), 'disk'), path.join(podDir(), 'persistent')].sort(),
    )
  }, 90_000)

  it("paces its disks' writes: direct I/O into the images, 64 MiB unwritten, 4 MiB in flight", async () => {
    const pacing = pacingUnder(podDir())
    expect(pacing).toHaveLength(2)
    for (const loop of pacing) {
      expect(loop.dio, loop.device).toBe(true)
      expect(loop.strict, loop.device).toBe('1')
      // The kernel keeps the bound as a share of its dirty limit, which moves with the host's
      // free memory: it reads back near 64 MiB (64 +- 1.3 MiB seen on a busy CI machine).
      expect(loop.maxBytes, loop.device).toBeGreaterThan(48 * 1024 * 1024)
      expect(loop.maxBytes, loop.device).toBeLessThan(80 * 1024 * 1024)
      expect(loop.requests * loop.requestKb, loop.device).toBe(4 * 1024)
    }
  })

  it('unmounts and deletes the images when the pod is terminated', async () => {
    const devices = execFileSync('losetup', ['-J', '-l', '-O', 'NAME,BACK-FILE,MAJ:MIN'], {
      encoding: 'utf8',
    })
    const paced = (
      JSON.parse(devices) as {
        loopdevices: { name: string; 'back-file': string; 'maj:min': string }[]
      }
    ).loopdevices.filter((loop) => loop['back-file'].startsWith(`${podDir()}/`))
    expect(paced).toHaveLength(2)
    const response = await call(`/v2/pods/${podId}`, { method: 'DELETE' })
    expect(response.status).toBe(204)
    await waitFor('the mounts and images to go', async () =>
      mountsUnder(podDir()).length === 0 &&
      loopsUnder(podDir()).length === 0 &&
      !statSync(podDir(), { throwIfNoEntry: false })
        ? true
        : undefined,
    )
    // The loop devices outlive the images: whoever uses them next gets the kernel's defaults.
    // Another test file's disk may have taken a freed device meanwhile (test files run side by
    // side): its pacing is that disk's own, so only devices still free are read.
    const attached = execFileSync('losetup', ['-a'], { encoding: 'utf8' })
    const free = paced.filter((loop) => !attached.includes(`${loop.name}:`))
    if (free.length === 0) console.log('disk pacing reset: both devices were taken again at once')
    for (const loop of free) {
      const left = bdiOf(loop.name, loop['maj:min'], false)
      expect(left.strict, loop.name).toBe('0')
      expect(left.requests * left.requestKb, loop.name).toBeGreaterThan(4 * 1024)
    }
  }, 60_000)
})

describe.runIf(bubblewrapOk)('a host whose process driver does not bound disks', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform({
      sandbox: 'bubblewrap',
      containment: { acceptUnenforced: [], processDisk: 'none' },
    })
  }, 60_000)

  afterAll(() => platform?.close(), 60_000)

  it("says so in the host report and refuses a member's pod there with the reason", async () => {
    const host = await json<{
      unenforcedLimits: { limit: string; reason: string; accepted: boolean }[]
    }>(await platform.call('/v2/admin/hosts/local'))
    expect(host.unenforcedLimits).toContainEqual({
      limit: 'disk',
      reason: 'containment.processDisk is none',
      accepted: false,
    })
    // Network volumes on this machine's storage are bounded by the same means.
    expect(host.unenforcedLimits).toContainEqual({
      limit: 'volume',
      reason: 'containment.processDisk is none',
      accepted: false,
    })
    const member = await otherAccountKey(platform, 'unbounded@example.com')
    const created = await json<PodJson>(
      await platform.call('/v2/pods', {
        method: 'POST',
        key: member,
        json: { name: 'refused', image: 'ubuntu', cpu: { id: 'cpu3c', vcpuCount: 2 } },
      }),
      201,
    )
    const refused = await waitFor('the pod to be refused', async () => {
      const pod = await json<PodJson>(
        await platform.call(`/v2/pods/${created.id}`, { key: member }),
      )
      return pod.status === 'ERROR' ? pod : undefined
    })
    expect(refused.statusReason).toMatch(
      /^not started: this host does not enforce the disk limit \(disk: containment\.processDisk is none\)/,
    )
  })
})
