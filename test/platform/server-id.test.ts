import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SERVER_ID_FILE } from '../../src/runtime/docker/server-id.js'
import type { Store } from '../../src/store/open-store.js'
import { KyselyServerIdRepo } from '../../src/store/server-id-repo.js'
import { KyselySettingsRepo } from '../../src/store/settings-repo.js'
import { platformServerIds } from '../../src/wiring/server-id-wiring.js'
import { testStores } from '../support/stores.js'

/**
 * The server id that labels the Docker driver's containers is the platform's, in the database
 * (docs/runtime.md, "The server id"): replicas with data directories of their own agree on it,
 * and a data directory's `server-id` file from before is carried over.
 */
describe.each(testStores())('the server id on $name', ({ open }) => {
  let store: Store
  const dirs: string[] = []
  const logged: { level: number; msg: string; [key: string]: unknown }[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => logged.push(JSON.parse(line)) })

  beforeEach(async () => {
    store = await open()
  })
  afterEach(async () => {
    await store.close()
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
    logged.length = 0
  })

  /** A data directory, with a `server-id` file when `fileId` is given. */
  function dataDir(fileId?: string): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-server-id-'))
    dirs.push(dir)
    if (fileId !== undefined) writeFileSync(path.join(dir, SERVER_ID_FILE), `${fileId}\n`)
    return dir
  }

  it('KyselyServerIdRepo: the first claim is stored, later ones get it; former ids are a set', async () => {
    const repo = new KyselyServerIdRepo(store.db)
    expect(await repo.get()).toBeUndefined()
    expect(await repo.claim('first-id')).toEqual({ id: 'first-id', claimed: true })
    expect(await repo.claim('second-id')).toEqual({ id: 'first-id', claimed: false })
    expect(await repo.get()).toBe('first-id')
    expect(await repo.formerIds()).toEqual([])
    await repo.addFormer('old-b')
    await repo.addFormer('old-a')
    await repo.addFormer('old-b')
    expect(await repo.formerIds()).toEqual(['old-a', 'old-b'])
    // Other settings are not former ids.
    await new KyselySettingsRepo(store.db).setIfAbsent('runtime.other', 'x')
    expect(await repo.formerIds()).toEqual(['old-a', 'old-b'])
  })

  it('replicas starting at once on an empty database agree on one id', async () => {
    const repo = new KyselyServerIdRepo(store.db)
    const candidates = Array.from({ length: 6 }, (_, i) => `racer-${i}`)
    const claims = await Promise.all(candidates.map((c) => repo.claim(c)))
    const winner = await repo.get()
    expect(candidates).toContain(winner)
    expect(claims.map((c) => c.id)).toEqual(candidates.map(() => winner))
    expect(claims.filter((c) => c.claimed)).toEqual([{ id: winner, claimed: true }])
  })

  it('a new platform stores a new id, and writes no file', async () => {
    const dir = dataDir()
    const first = await platformServerIds(store, dir, logger)
    expect(first.serverId).toMatch(/^srv-[0-9a-f]{12}$/)
    expect(await new KyselyServerIdRepo(store.db).get()).toBe(first.serverId)
    expect(existsSync(path.join(dir, SERVER_ID_FILE))).toBe(false)
    // Another replica with a data directory of its own: the same id.
    const second = await platformServerIds(store, dataDir(), logger)
    expect(second.serverId).toBe(first.serverId)
    expect(await second.formerServerIds()).toEqual([])
    expect(logged.filter((l) => l.level >= 40)).toEqual([])
  })

  it("carries a data directory's id over on the first start, and keeps it", async () => {
    const dir = dataDir('gpu-host-7')
    expect((await platformServerIds(store, dir, logger)).serverId).toBe('gpu-host-7')
    expect(logged.map((l) => l.msg)).toEqual([
      'stored the server id of the data directory in the database: every replica uses it',
    ])
    // The file may go: the database has it.
    rmSync(path.join(dir, SERVER_ID_FILE))
    expect((await platformServerIds(store, dir, logger)).serverId).toBe('gpu-host-7')
    expect((await platformServerIds(store, dataDir(), logger)).serverId).toBe('gpu-host-7')
    expect(logged.filter((l) => l.level >= 40)).toEqual([])
  })

  it("keeps the database's id over a file that names another, records it as former, and warns", async () => {
    await platformServerIds(store, dataDir('replica-a'), logger)
    const dir = dataDir('replica-b')
    const ids = await platformServerIds(store, dir, logger)
    expect(ids.serverId).toBe('replica-a')
    expect(await ids.formerServerIds()).toEqual(['replica-b'])
    const warnings = logged.filter((l) => l.level === 40)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ serverId: 'replica-a', fileServerId: 'replica-b' })
    expect(warnings[0]!.msg).toContain(
      `${path.join(dir, SERVER_ID_FILE)} names the server id replica-b, but this platform's database has replica-a`,
    )
    // Every replica knows the former id, also one whose own file matches the database's.
    const other = await platformServerIds(store, dataDir('replica-a'), logger)
    expect(await other.formerServerIds()).toEqual(['replica-b'])
  })

  it('replicas with different files starting at once: one id wins, the others are former', async () => {
    const files = ['racer-a', 'racer-b', 'racer-c']
    const results = await Promise.all(
      files.map((id) => platformServerIds(store, dataDir(id), logger)),
    )
    const winner = results[0]!.serverId
    expect(files).toContain(winner)
    expect(results.map((r) => r.serverId)).toEqual(files.map(() => winner))
    const fresh = await platformServerIds(store, dataDir(), logger)
    expect(await fresh.formerServerIds()).toEqual(files.filter((id) => id !== winner))
  })

  it('refuses to start on a file that holds no id, naming it', async () => {
    const dir = dataDir('Not An Id!')
    await expect(platformServerIds(store, dir, logger)).rejects.toThrow(
      `${path.join(dir, SERVER_ID_FILE)} does not hold a server id`,
    )
    expect(await new KyselyServerIdRepo(store.db).get()).toBeUndefined()
  })
})
