import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { isValidObjectKey, LocalObjectStore } from './local-object-store.js'

describe('the local object store', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-objects-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('keeps objects with their content type and deletes them', async () => {
    const store = new LocalObjectStore(dir)
    await store.put('images/a.png', Buffer.from('png'), 'image/png')
    expect(await store.get('images/a.png')).toEqual({
      body: Buffer.from('png'),
      contentType: 'image/png',
    })
    await store.delete('images/a.png')
    expect(await store.get('images/a.png')).toBeUndefined()
  })

  it('refuses keys that could leave its directory', async () => {
    for (const key of ['../x', 'a/../../x', '/etc/passwd', 'a//b', '.hidden']) {
      expect(isValidObjectKey(key)).toBe(false)
    }
    expect(await new LocalObjectStore(dir).get('../x')).toBeUndefined()
  })
})
