import { execFileSync } from 'node:child_process'
import { statSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { blockDeviceOf, devNameOf, splitDeviceNumber } from './block-device.js'

describe('splitDeviceNumber', () => {
  it("splits st_dev as glibc's major() and minor() do", () => {
    expect(splitDeviceNumber(254 * 256)).toEqual({ major: 254, minor: 0 })
    expect(splitDeviceNumber(8 * 256 + 1)).toEqual({ major: 8, minor: 1 })
    // nvme: major 259, minors past 255 use the high bits.
    expect(splitDeviceNumber(0x10300 | (0x1 << 20))).toEqual({ major: 259, minor: 256 })
  })

  it('reads DEVNAME of a uevent', () => {
    expect(devNameOf('MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n')).toBe('vda')
    expect(devNameOf('MAJOR=0\n')).toBeUndefined()
  })
})

describe('blockDeviceOf', () => {
  it('finds the whole disk of a directory, as lsblk names it', async () => {
    const source = execFileSync('df', ['--output=source', '/'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .at(-1)!
    const found = await blockDeviceOf('/')
    if (!source.startsWith('/dev/')) {
      // A root on overlay or tmpfs (a container): there is no disk to name.
      expect(found).toMatchObject({ ok: false, reason: expect.stringMatching(/no block device/) })
      return
    }
    const parent = execFileSync('lsblk', ['-no', 'PKNAME', source], { encoding: 'utf8' }).trim()
    const disk = parent ? `/dev/${parent}` : source
    const rdev = statSync(disk).rdev
    const { major, minor } = splitDeviceNumber(rdev)
    expect(found).toEqual({ ok: true, device: disk, majorMinor: `${major}:${minor}` })
  })

  it('says why a file system on no disk has none', async () => {
    expect(await blockDeviceOf('/proc')).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^\/proc is on a file system with no block device \(device 0:\d+/,
      ),
    })
    expect(await blockDeviceOf('/no/such/dir')).toEqual({
      ok: false,
      reason: expect.stringMatching(/^cannot read \/no\/such\/dir here \(ENOENT/),
    })
  })
})
