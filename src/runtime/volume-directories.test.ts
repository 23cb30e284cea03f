import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DirectoryVolumeStorage, MAX_USAGE_ENTRIES } from './volume-directories.js'

describe('DirectoryVolumeStorage', () => {
  let dataDir: string
  let storage: DirectoryVolumeStorage

  beforeEach(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-volumes-'))
    storage = new DirectoryVolumeStorage({ dataDir, usageCacheMs: 0 })
  })
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }))

  it('keeps each volume in <dataDir>/volumes/<id>', async () => {
    await storage.create('abcde12345', 10)
    expect(storage.path('abcde12345')).toBe(path.join(dataDir, 'volumes', 'abcde12345'))
    expect(existsSync(path.join(dataDir, 'volumes', 'abcde12345'))).toBe(true)
  })

  it("keeps a data center's volumes in its shared storage when it names one", async () => {
    const shared = path.join(dataDir, 'nfs', 'eu-se-1')
    const perDataCenter = new DirectoryVolumeStorage({
      dataDir,
      usageCacheMs: 0,
      dataCenterRoots: { 'EU-SE-1': shared },
    })
    await perDataCenter.create('abcde12345', 10, 'EU-SE-1')
    expect(perDataCenter.path('abcde12345', 'EU-SE-1')).toBe(path.join(shared, 'abcde12345'))
    writeFileSync(path.join(shared, 'abcde12345', 'f'), 'four')
    expect(await perDataCenter.usedBytes('abcde12345', 'EU-SE-1')).toBe(4)
    // Other data centers keep the default root.
    expect(perDataCenter.path('abcde12345', 'US-KS-2')).toBe(
      path.join(dataDir, 'volumes', 'abcde12345'),
    )
    await perDataCenter.remove('abcde12345', 'EU-SE-1')
    expect(existsSync(path.join(shared, 'abcde12345'))).toBe(false)
  })

  it('says which volumes are on this machine, and not on a shared storage', () => {
    const perDataCenter = new DirectoryVolumeStorage({
      dataDir,
      dataCenterRoots: { 'EU-SE-1': path.join(dataDir, 'nfs') },
    })
    expect(perDataCenter.isLocal('US-KS-2')).toBe(true)
    expect(perDataCenter.isLocal('EU-SE-1')).toBe(false)
  })

  it("counts a bounded volume's image while it is not mounted, and deletes it with it", async () => {
    await storage.create('abcde12345', 10)
    const image = `${storage.path('abcde12345')}.ext4`
    // What the process driver leaves beside the directory (its files are inside).
    writeFileSync(image, Buffer.alloc(64 * 1024, 1))
    expect(await storage.usedBytes('abcde12345')).toBeGreaterThanOrEqual(64 * 1024)
    await storage.remove('abcde12345')
    expect(existsSync(image)).toBe(false)
    expect(existsSync(storage.path('abcde12345'))).toBe(false)
  })

  it('never hands an existing directory to a new volume', async () => {
    await storage.create('abcde12345', 10)
    await expect(storage.create('abcde12345', 10)).rejects.toMatchObject({ code: 'EEXIST' })
  })

  it('refuses ids that could name a directory outside the root', () => {
    for (const id of ['..', '../x', 'a/b', '', 'ABC']) {
      expect(() => storage.path(id)).toThrow(/not a volume id/)
    }
  })

  it('resizes without touching the files, and removes the directory with them', async () => {
    await storage.create('abcde12345', 10)
    writeFileSync(path.join(storage.path('abcde12345'), 'kept'), 'x')
    await storage.resize('abcde12345', 20)
    expect(existsSync(path.join(storage.path('abcde12345'), 'kept'))).toBe(true)
    await storage.remove('abcde12345')
    expect(existsSync(storage.path('abcde12345'))).toBe(false)
    await storage.remove('abcde12345')
  })

  it('counts apparent bytes of files, hard links once, symlinks not followed', async () => {
    await storage.create('abcde12345', 10)
    const dir = storage.path('abcde12345')
    expect(await storage.usedBytes('abcde12345')).toBe(0)
    mkdirSync(path.join(dir, 'a', 'b'), { recursive: true })
    writeFileSync(path.join(dir, 'top'), Buffer.alloc(1000))
    writeFileSync(path.join(dir, 'a', 'b', 'deep'), Buffer.alloc(2345))
    linkSync(path.join(dir, 'top'), path.join(dir, 'a', 'hardlink'))
    const outside = path.join(dataDir, 'outside')
    writeFileSync(outside, Buffer.alloc(99_999))
    symlinkSync(outside, path.join(dir, 'link-out'))
    symlinkSync(dataDir, path.join(dir, 'dir-link-out'))
    expect(await storage.usedBytes('abcde12345')).toBe(3345)
  })

  it('measures small volumes every time', async () => {
    const small = new DirectoryVolumeStorage({ dataDir, usageCacheMs: 60_000, cacheFromEntries: 3 })
    await small.create('abcde12345', 10)
    const dir = small.path('abcde12345')
    writeFileSync(path.join(dir, 'a'), 'x')
    expect(await small.usedBytes('abcde12345')).toBe(1)
    writeFileSync(path.join(dir, 'b'), 'xx')
    expect(await small.usedBytes('abcde12345')).toBe(3)
    writeFileSync(path.join(dir, 'c'), 'xxx')
    expect(await small.usedBytes('abcde12345')).toBe(6)
    // Three entries reach the threshold: this measurement is reused.
    writeFileSync(path.join(dir, 'd'), 'xxxx')
    expect(await small.usedBytes('abcde12345')).toBe(6)
  })

  it('reports 0 for a volume without a directory', async () => {
    expect(await storage.usedBytes('nosuch1234')).toBe(0)
  })

  it('reuses a large measurement for usageCacheMs, and forgets it when the volume is removed', async () => {
    let now = 0
    const cached = new DirectoryVolumeStorage({
      dataDir,
      usageCacheMs: 1000,
      cacheFromEntries: 0,
      now: () => now,
    })
    await cached.create('abcde12345', 10)
    expect(await cached.usedBytes('abcde12345')).toBe(0)
    writeFileSync(path.join(cached.path('abcde12345'), 'f'), Buffer.alloc(10))
    now = 999
    expect(await cached.usedBytes('abcde12345')).toBe(0)
    now = 1000
    expect(await cached.usedBytes('abcde12345')).toBe(10)
    await cached.remove('abcde12345')
    expect(await cached.usedBytes('abcde12345')).toBe(0)
  })

  it('stops counting at the entry bound (200,000 unless told), a lower bound past it', async () => {
    expect(MAX_USAGE_ENTRIES).toBe(200_000)
    const bounded = new DirectoryVolumeStorage({ dataDir, usageCacheMs: 0, maxUsageEntries: 50 })
    await bounded.create('abcde12345', 10)
    const dir = bounded.path('abcde12345')
    for (let i = 0; i < 80; i++) writeFileSync(path.join(dir, String(i)), 'x')
    expect(await bounded.usedBytes('abcde12345')).toBe(50)
    expect(await storage.usedBytes('abcde12345')).toBe(80)
  })
})
