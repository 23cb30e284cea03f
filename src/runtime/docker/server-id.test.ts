import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadServerId, SERVER_ID_FILE } from './server-id.js'

describe('loadServerId', () => {
  const dirs: string[] = []
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })
  function dir(): string {
    const made = mkdtempSync(path.join(tmpdir(), 'podyard-server-id-'))
    dirs.push(made)
    return made
  }

  it('generates an id once and returns the same one after a restart', () => {
    const dataDir = path.join(dir(), 'not-yet-created')
    const id = loadServerId(dataDir)
    expect(id).toMatch(/^srv-[0-9a-f]{12}$/)
    expect(readFileSync(path.join(dataDir, SERVER_ID_FILE), 'utf8')).toBe(`${id}\n`)
    expect(loadServerId(dataDir)).toBe(id)
    expect(loadServerId(dir())).not.toBe(id)
  })

  it('keeps an id an operator wrote, and refuses one Docker could not use in names', () => {
    const dataDir = dir()
    writeFileSync(path.join(dataDir, SERVER_ID_FILE), 'gpu-host-7\n')
    expect(loadServerId(dataDir)).toBe('gpu-host-7')
    writeFileSync(path.join(dataDir, SERVER_ID_FILE), 'Not An Id!\n')
    expect(() => loadServerId(dataDir)).toThrow(/does not hold a server id/)
  })
})
