import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { lockForServing, StoreInUseError } from './serving-lock.js'

describe('lockForServing', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-lock-'))
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('lets one holder at a time hold the lock, and names it to the others', () => {
    const file = path.join(dir, 'serve.lock')
    const held = lockForServing(file, 'the data directory D')
    held.describe({ url: 'http://127.0.0.1:8080' })
    const refused = (() => {
      try {
        lockForServing(file, 'the data directory D')
      } catch (error) {
        return error
      }
    })()
    expect(refused).toBeInstanceOf(StoreInUseError)
    expect((refused as Error).message).toMatch(
      new RegExp(
        `^the data directory D is in use by another podyard serve \\(pid ${process.pid} .*serving http://127.0.0.1:8080\\)`,
      ),
    )
    held.release()
    held.release()
    lockForServing(file, 'the data directory D').release()
  })
})
