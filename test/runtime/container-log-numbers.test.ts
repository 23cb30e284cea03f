import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { DecodedLine } from '../../src/runtime/docker/log-frames.js'
import { LogNumbering } from '../../src/runtime/docker/log-numbering.js'
import { LogNumbersStore } from '../../src/runtime/docker/log-numbers-store.js'
import { KyselyContainerLogNumbersRepo } from '../../src/store/container-log-numbers-repo.js'
import type { Store } from '../../src/store/open-store.js'
import { adoptLogNumberFiles } from '../../src/wiring/host-runtimes.js'
import { testStores } from '../support/stores.js'

/**
 * A Docker container's log numbers kept in the store (migration 0030, docs/runtime.md, "Logs"),
 * on each store: a replica that reads a log first after Docker rotated away lines another
 * replica numbered numbers it as that one did, and takes in what the other numbered since its
 * own last read. Without the store, each server numbered from the oldest line it could read.
 */
const CONTAINER = 'c0ffee'.padEnd(64, '0')
const T0 = '2026-11-29T00:00:00.000Z'

/** The container's own lines `from`..`to`, as the decoder gives a pass over them (from 1). */
function retained(from: number, to: number): DecodedLine[] {
  return Array.from({ length: to - from + 1 }, (_, k) => {
    const n = from + k
    return { seq: k + 1, ts: T0, line: `line ${n}`, key: `key-${n}`, time: [n, 0] }
  })
}

/** A replica's pass over the retained log: the number of each line's text. */
async function pass(replica: LogNumbersStore, lines: DecodedLine[]) {
  const numbering = new LogNumbering(await replica.numbersOf(CONTAINER), 0)
  const numbered = [...numbering.push(lines), ...numbering.end()]
  await replica.flush()
  return new Map(numbered.map((l) => [l.line, l.seq]))
}

describe.each(testStores())('container log numbers on $name', ({ open }) => {
  let store: Store
  let repo: KyselyContainerLogNumbersRepo

  beforeEach(async () => {
    store = await open()
    repo = new KyselyContainerLogNumbersRepo(store.db, () => T0)
  })

  afterEach(async () => {
    await store.close()
  })

  it('numbers a rotated log on another replica as the replica that read it first', async () => {
    const first = new LogNumbersStore(repo)
    const second = new LogNumbersStore(repo)
    expect((await pass(first, retained(1, 2100))).get('line 2100')).toBe(2100)

    // Docker deleted lines 1..1500 before the second replica's first read.
    const read = await pass(second, retained(1501, 2600))
    expect(read.get('line 1501')).toBe(1501)
    expect(read.get('line 2600')).toBe(2600)

    // The first numbers on (an anchor at 3072); Docker deletes all the second knew; the second
    // takes in the first's newer anchor at its next read and numbers on as it did.
    expect((await pass(first, retained(2500, 3500))).get('line 3500')).toBe(3500)
    const later = await pass(second, retained(3001, 3600))
    expect(later.get('line 3001')).toBe(3001)
    expect(later.get('line 3600')).toBe(3600)

    // A removed container's numbers go from the store.
    await first.forget(CONTAINER)
    expect(await repo.read(CONTAINER)).toBeUndefined()
  })

  it("moves an earlier version's files into the store once, the store's row winning", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-log-number-files-'))
    try {
      const dir = path.join(dataDir, 'runtime', 'docker-log-numbers')
      mkdirSync(dir, { recursive: true })
      const other = 'beef'.padEnd(64, '1')
      writeFileSync(path.join(dir, `${CONTAINER}.json`), '{"anchors":[["key-1024",1024]]}')
      writeFileSync(path.join(dir, `${other}.json`), '{"anchors":[["from-file",1024]]}')
      await repo.write(other, '{"anchors":[["from-store",1024]]}')

      await adoptLogNumberFiles(dataDir, repo)
      expect(await repo.read(CONTAINER)).toBe('{"anchors":[["key-1024",1024]]}')
      expect(await repo.read(other)).toBe('{"anchors":[["from-store",1024]]}')
      expect(existsSync(dir)).toBe(false)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
