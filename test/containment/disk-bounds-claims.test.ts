import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DiskBounds } from '../../src/runtime/disk-bounds/disk-bounds.js'

/**
 * A network volume mounted for this machine's docker driver is claimed by its containers (and
 * one of the process driver by its workloads): a new server's sweep and another driver's
 * release leave it mounted while a driver says a workload uses it (or cannot say), and
 * unmount it once nothing claims it.
 */
const probeDir = mkdtempSync(path.join(tmpdir(), 'podyard-claims-probe-'))
const probe = await new DiskBounds({ mode: 'auto', root: probeDir, probeDir }).unenforced()
rmSync(probeDir, { recursive: true, force: true })
if (probe.length > 0) console.log('disk bound claims: left out here:', probe[0]!.reason)

function mounted(dir: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[4] === dir)
}

describe.runIf(probe.length === 0)('disk bounds claimed by another driver', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'podyard-claims-'))
  const volumeDir = path.join(root, 'volumes', 'v1')
  const spec = {
    id: 'pod-a',
    containerDiskPath: path.join(root, 'disk'),
    diskGb: 0,
    mounts: [{ kind: 'network' as const, hostPath: volumeDir, containerPath: '/v', sizeGb: 1 }],
  }
  const bounds = () => new DiskBounds({ mode: 'auto', root, probeDir: root })

  afterAll(() => {
    if (mounted(volumeDir)) execFileSync('umount', ['-l', volumeDir])
    rmSync(root, { recursive: true, force: true })
  })

  it('leaves a claimed volume mounted; unmounts it once nothing claims it', async () => {
    await bounds().prepare(spec)
    expect(mounted(volumeDir)).toBe(true)

    // A new server: the docker driver says a container binds it.
    const claimed = bounds()
    claimed.claimAlso(async () => [volumeDir])
    expect(await claimed.sweep(new Set())).toEqual([])
    await claimed.release({ ...spec, id: 'pod-b' }, new Set())
    expect(mounted(volumeDir)).toBe(true)

    // The engine does not answer: nothing is swept or released.
    const unknown = bounds()
    unknown.claimAlso(async () => {
      throw new Error('engine down')
    })
    expect(await unknown.sweep(new Set())).toEqual([])
    await unknown.release({ ...spec, id: 'pod-b' }, new Set())
    expect(mounted(volumeDir)).toBe(true)

    // No container binds it any more: the sweep unmounts it.
    const unclaimed = bounds()
    unclaimed.claimAlso(async () => [])
    expect(await unclaimed.sweep(new Set())).toEqual([volumeDir])
    expect(mounted(volumeDir)).toBe(false)

    // Claims name every workload but the one released: the release of another workload
    // leaves the volume of pod-a; that of pod-a itself unmounts it.
    await bounds().prepare(spec)
    const perWorkload = bounds()
    perWorkload.claimAlso(async (except) => (except === 'pod-a' ? [] : [volumeDir]))
    await perWorkload.release({ ...spec, id: 'pod-b' }, new Set())
    expect(mounted(volumeDir)).toBe(true)
    await perWorkload.release(spec, new Set())
    expect(mounted(volumeDir)).toBe(false)
  })
})
