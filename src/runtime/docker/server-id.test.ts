import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { isServerId, newServerId, readServerIdFile, SERVER_ID_FILE } from './server-id.js'

describe('server ids', () => {
  const dirs: string[] = []
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })
  function dir(): string {
    const made = mkdtempSync(path.join(tmpdir(), 'podyard-server-id-'))
    dirs.push(made)
    return made
  }

  it('makes new ids that Docker names can carry, a different one each time', () => {
    const id = newServerId()
    expect(id).toMatch(/^srv-[0-9a-f]{12}$/)
    expect(isServerId(id)).toBe(true)
    expect(newServerId()).not.toBe(id)
  })

  it('reads the id a data directory kept, and writes nothing when there is none', () => {
    const dataDir = dir()
    expect(readServerIdFile(dataDir)).toBeUndefined()
    expect(readServerIdFile(path.join(dataDir, 'not-yet-created'))).toBeUndefined()
    writeFileSync(path.join(dataDir, SERVER_ID_FILE), 'gpu-host-7\n')
    expect(readServerIdFile(dataDir)).toBe('gpu-host-7')
  })

  it('refuses a file that holds no id Docker could use in names', () => {
    const dataDir = dir()
    writeFileSync(path.join(dataDir, SERVER_ID_FILE), 'Not An Id!\n')
    expect(() => readServerIdFile(dataDir)).toThrow(/server-id does not hold a server id/)
    expect(isServerId('')).toBe(false)
    expect(isServerId('-x')).toBe(false)
  })
})
