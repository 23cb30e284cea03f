import { describe, expect, it } from 'vitest'
import {
  diskBoundPlans,
  leftoversUnder,
  mkfsArgs,
  parseLoopDevices,
  lastMountAt,
  parseMountInfo,
} from './disk-bound-plan.js'

const GIB = 1024 ** 3

describe('diskBoundPlans', () => {
  it("bounds the container disk at diskGb and the pod's sized volume, each by an image beside it", () => {
    const plans = diskBoundPlans({
      containerDiskPath: '/data/pods/p1/disk',
      diskGb: 5,
      mounts: [
        {
          hostPath: '/data/pods/p1/persistent',
          containerPath: '/workspace',
          kind: 'persistent',
          sizeGb: 20,
        },
      ],
    })
    expect(plans).toEqual([
      {
        kind: 'container-disk',
        mountPoint: '/data/pods/p1/disk',
        image: '/data/pods/p1/disk.ext4',
        sizeBytes: 5 * GIB,
      },
      {
        kind: 'volume',
        mountPoint: '/data/pods/p1/persistent',
        image: '/data/pods/p1/persistent.ext4',
        sizeBytes: 20 * GIB,
      },
    ])
  })

  it('bounds a network volume with a size, shared by the workloads that mount it', () => {
    const plans = diskBoundPlans({
      containerDiskPath: '/data/workers/w1/disk',
      diskGb: 0,
      mounts: [
        {
          hostPath: '/data/volumes/v1',
          containerPath: '/runpod-volume',
          kind: 'network',
          sizeGb: 10,
        },
      ],
    })
    expect(plans).toEqual([
      {
        kind: 'network-volume',
        mountPoint: '/data/volumes/v1',
        image: '/data/volumes/v1.ext4',
        sizeBytes: 10 * GIB,
      },
    ])
  })

  it('leaves unsized network volumes, read-only and unsized mounts, and a zero disk unbounded', () => {
    const plans = diskBoundPlans({
      containerDiskPath: '/data/workers/w1/disk',
      diskGb: 0,
      mounts: [
        { hostPath: '/data/volumes/v1', containerPath: '/runpod-volume', kind: 'network' },
        { hostPath: '/opt/podyard', containerPath: '/podyard', kind: 'platform', readOnly: true },
        { hostPath: '/data/pods/p1/persistent', containerPath: '/workspace', kind: 'persistent' },
      ],
    })
    expect(plans).toEqual([])
  })
})

describe('mkfsArgs', () => {
  it('reserves no blocks for root and initialises lazily, so the image stays sparse', () => {
    expect(mkfsArgs('/d/disk.ext4')).toEqual([
      '-q',
      '-F',
      '-m',
      '0',
      '-E',
      'lazy_itable_init=1,lazy_journal_init=1',
      '/d/disk.ext4',
    ])
  })
})

const MOUNTINFO = [
  '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
  '61 22 7:0 / /data/pods/p1/disk rw,relatime shared:30 - ext4 /dev/loop0 rw,discard',
  '62 22 7:1 / /data/pods/p\\040two/disk rw,relatime - ext4 /dev/loop1 rw,discard',
  '63 22 7:2 / /elsewhere/disk rw,relatime - ext4 /dev/loop2 rw',
  '',
].join('\n')

describe('parseMountInfo', () => {
  it('reads mount points (unescaping spaces), types and sources, with or without optional fields', () => {
    expect(parseMountInfo(MOUNTINFO)).toEqual([
      { mountPoint: '/', fsType: 'ext4', source: '/dev/vda' },
      { mountPoint: '/data/pods/p1/disk', fsType: 'ext4', source: '/dev/loop0' },
      { mountPoint: '/data/pods/p two/disk', fsType: 'ext4', source: '/dev/loop1' },
      { mountPoint: '/elsewhere/disk', fsType: 'ext4', source: '/dev/loop2' },
    ])
  })
})

describe('lastMountAt', () => {
  const mounts = [
    MOUNTINFO.trimEnd(),
    // Mounted a second time at the same point: the last mount is the one seen there.
    '64 61 7:3 / /data/pods/p1/disk rw,relatime - ext4 /dev/loop3 rw,discard',
    // A longer path that starts with another, and a root field (the fourth) naming one.
    '65 22 7:4 / /data/pods/p1/disk2 rw,relatime - ext4 /dev/loop4 rw',
    '66 22 0:50 /elsewhere/disk /bind/target rw,relatime - ext4 /dev/vda rw',
  ].join('\n')

  it('finds the last mount at a path, as parseMountInfo would, without a partial match', () => {
    for (const point of ['/', '/data/pods/p1/disk', '/data/pods/p two/disk', '/elsewhere/disk']) {
      const all = parseMountInfo(mounts).filter((m) => m.mountPoint === point)
      expect(lastMountAt(mounts, point), point).toEqual(all.at(-1))
    }
    expect(lastMountAt(mounts, '/data/pods/p1/disk')?.source).toBe('/dev/loop3')
    expect(lastMountAt(mounts, '/data/pods/p1/disk2')?.source).toBe('/dev/loop4')
    expect(lastMountAt(mounts, '/data/pods/p1')).toBeUndefined()
    expect(lastMountAt(mounts, '/bind/target')?.source).toBe('/dev/vda')
  })

  it('reads a text without a final newline, and one with no mounts', () => {
    expect(lastMountAt(mounts, '/bind/target')).toBeDefined()
    expect(lastMountAt('', '/')).toBeUndefined()
  })
})

describe('parseLoopDevices', () => {
  it("reads losetup's JSON, dropping the mark of a removed image, and no output as none", () => {
    const json = JSON.stringify({
      loopdevices: [
        { name: '/dev/loop0', autoclear: true, 'back-file': '/data/pods/p1/disk.ext4' },
        { name: '/dev/loop3', autoclear: true, 'back-file': '/data/pods/p9/disk.ext4 (deleted)' },
      ],
    })
    expect(parseLoopDevices(json)).toEqual([
      { name: '/dev/loop0', backFile: '/data/pods/p1/disk.ext4' },
      { name: '/dev/loop3', backFile: '/data/pods/p9/disk.ext4' },
    ])
    expect(parseLoopDevices('')).toEqual([])
  })
})

describe('leftoversUnder', () => {
  const mounts = parseMountInfo(MOUNTINFO)
  const loops = [
    { name: '/dev/loop0', backFile: '/data/pods/p1/disk.ext4' },
    { name: '/dev/loop1', backFile: '/data/pods/p two/disk.ext4' },
    { name: '/dev/loop2', backFile: '/elsewhere/disk.ext4' },
    { name: '/dev/loop5', backFile: '/data/pods/p3/disk.ext4' },
    { name: '/dev/loop6', backFile: '/data/other.img' },
  ]

  it('unmounts unclaimed images under the root and detaches its unmounted loops, nothing else', () => {
    expect(leftoversUnder('/data', loops, mounts, new Set(['/data/pods/p1/disk']))).toEqual({
      unmount: ['/data/pods/p two/disk'],
      detach: ['/dev/loop5'],
    })
  })

  it('keeps everything a workload claims, and never looks outside the root', () => {
    const claimed = new Set(['/data/pods/p1/disk', '/data/pods/p two/disk'])
    expect(leftoversUnder('/data', loops.slice(0, 3), mounts, claimed)).toEqual({
      unmount: [],
      detach: [],
    })
    expect(leftoversUnder('/dat', loops, mounts, new Set())).toEqual({ unmount: [], detach: [] })
  })
})
