import { describe, expect, it } from 'vitest'
import {
  containmentKey,
  diskQuotaTrialOf,
  diskWriteTrialOf,
  diskWriteUnenforced,
  isSettled,
  storageDriverOf,
  unenforcedLimitsOf,
  type EngineInfo,
} from './engine-containment.js'

/** This machine's engine (docker info): cgroup v1, overlay2 on ext4. */
const info: EngineInfo = {
  ID: 'VPZD',
  ServerVersion: '20.10.24',
  Driver: 'overlay2',
  DriverStatus: [
    ['Backing Filesystem', 'extfs'],
    ['Supports d_type', 'true'],
  ],
  MemoryLimit: true,
  CpuCfsQuota: true,
  PidsLimit: true,
  CgroupVersion: '1',
}

const OVERLAY_REFUSAL =
  "(HTTP code 500) server error - --storage-opt is supported only for overlay over xfs with 'pquota' mount option"

describe('diskQuotaTrialOf', () => {
  it('reads a created container as enforced', () => {
    expect(diskQuotaTrialOf(undefined)).toEqual({ outcome: 'enforced' })
  })

  it("reads the storage driver's refusal as refused, in the engine's words", () => {
    expect(diskQuotaTrialOf(new Error(OVERLAY_REFUSAL))).toEqual({
      outcome: 'refused',
      message: "--storage-opt is supported only for overlay over xfs with 'pquota' mount option",
    })
    // devicemapper takes sizes, but none below its base size.
    expect(
      diskQuotaTrialOf(new Error('devicemapper: Container size cannot be smaller than 10 GB')),
    ).toMatchObject({ outcome: 'refused' })
    expect(
      diskQuotaTrialOf(new Error('Failed to enable quota for dir /var/lib/docker/btrfs')),
    ).toMatchObject({ outcome: 'refused' })
  })

  it('leaves any other failure unknown, to be tried again', () => {
    const busy = diskQuotaTrialOf(new Error('(HTTP code 404) no such image - podyard-disk-trial'))
    expect(busy).toEqual({ outcome: 'unknown', message: 'podyard-disk-trial' })
    expect(isSettled(busy)).toBe(false)
    expect(isSettled({ outcome: 'enforced' })).toBe(true)
    expect(isSettled({ outcome: 'refused', message: 'x' })).toBe(true)
  })
})

describe('unenforcedLimitsOf', () => {
  it('is empty for an engine with every cgroup controller that took a disk size', () => {
    expect(unenforcedLimitsOf(info, { outcome: 'enforced' })).toEqual([])
  })

  it('names the disk with the storage driver and what the engine said', () => {
    const [disk, ...others] = unenforcedLimitsOf(info, diskQuotaTrialOf(new Error(OVERLAY_REFUSAL)))
    expect(others).toEqual([])
    expect(disk).toEqual({
      limit: 'disk',
      reason:
        "the storage driver overlay2 on extfs does not enforce a container disk size (the engine says: --storage-opt is supported only for overlay over xfs with 'pquota' mount option); sizes are enforced by overlay2 on xfs mounted with pquota, btrfs and zfs (docs/runtime.md)",
    })
  })

  it('counts a disk it could not find out about as unenforced', () => {
    expect(unenforcedLimitsOf(info, { outcome: 'unknown', message: 'timeout' })).toEqual([
      {
        limit: 'disk',
        reason:
          'could not find out whether the storage driver overlay2 on extfs enforces a container disk size (timeout); tried again within a minute',
      },
    ])
  })

  it('names each cgroup controller the engine lacks, and one it does not mention', () => {
    const limits = (over: Partial<EngineInfo>) =>
      unenforcedLimitsOf({ ...info, ...over }, { outcome: 'enforced' }).map((u) => u.limit)
    expect(limits({ MemoryLimit: false })).toEqual(['memory'])
    expect(limits({ CpuCfsQuota: false })).toEqual(['cpu'])
    expect(limits({ PidsLimit: false })).toEqual(['pids'])
    const { PidsLimit: _omitted, ...older } = info
    expect(unenforcedLimitsOf(older, { outcome: 'enforced' })).toEqual([
      {
        limit: 'pids',
        reason: 'the engine cannot limit processes (docker info: PidsLimit is not true)',
      },
    ])
  })
})

describe('storageDriverOf and containmentKey', () => {
  it('names the storage driver with its backing filesystem when the engine gives it', () => {
    expect(storageDriverOf(info)).toBe('overlay2 on extfs')
    expect(storageDriverOf({ Driver: 'zfs', DriverStatus: null })).toBe('zfs')
    expect(storageDriverOf({})).toBe('unknown')
  })

  it('changes when what the answer depends on changes, and only then', () => {
    const key = containmentKey(info)
    expect(containmentKey({ ...info, Name: 'renamed', NCPU: 64 })).toBe(key)
    expect(containmentKey({ ...info, Driver: 'btrfs' })).not.toBe(key)
    expect(containmentKey({ ...info, DriverStatus: [['Backing Filesystem', 'xfs']] })).not.toBe(key)
    expect(containmentKey({ ...info, ServerVersion: '27.0.1' })).not.toBe(key)
    expect(containmentKey({ ...info, PidsLimit: false })).not.toBe(key)
  })
})

describe('diskWriteTrialOf', () => {
  it('is enforced only where the created container kept both limits on the disk', () => {
    const kept = {
      BlkioDeviceWriteBps: [{ Path: '/dev/vda', Rate: 1048576 }],
      BlkioDeviceWriteIOps: [{ Path: '/dev/vda', Rate: 100 }],
    }
    expect(diskWriteTrialOf('/dev/vda', kept)).toEqual({ outcome: 'enforced', device: '/dev/vda' })
    expect(diskWriteUnenforced(diskWriteTrialOf('/dev/vda', kept))).toEqual([])
    // An engine without the kernel's throttling creates the container with the lists emptied.
    const dropped = diskWriteTrialOf('/dev/vda', {
      BlkioDeviceWriteBps: [],
      BlkioDeviceWriteIOps: null,
    })
    expect(diskWriteUnenforced(dropped)).toEqual([
      {
        limit: 'diskWrite',
        reason: expect.stringMatching(
          /^the engine drops block I\/O write limits .*\/dev\/vda is the disk of its data root$/,
        ),
      },
    ])
    expect(diskWriteTrialOf('/dev/vda', { ...kept, BlkioDeviceWriteIOps: [] }).outcome).toBe(
      'unenforced',
    )
  })

  it('says a trial that told nothing is tried again', () => {
    expect(diskWriteUnenforced({ outcome: 'unknown', message: 'engine busy' })).toEqual([
      {
        limit: 'diskWrite',
        reason:
          'could not find out whether the engine limits disk writes (engine busy); tried again within a minute',
      },
    ])
  })
})
