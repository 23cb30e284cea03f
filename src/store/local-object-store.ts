import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { ObjectStore } from '../domain/models/ports.js'

/** Keys are relative paths of safe segments: nothing may climb out of the store's directory. */
const KEY_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/

export function isValidObjectKey(key: string): boolean {
  return key.length <= 512 && KEY_SHAPE.test(key) && !key.split('/').includes('..')
}

const CONTENT_TYPE_SUFFIX = '.content-type'

/**
 * The default object store: files under `<dataDir>/objects/<key>`, each with its content type
 * beside it. A write goes to a temporary file renamed into place, so a reader never sees half an
 * object. S3ObjectStore (s3-object-store.ts) implements the same port over a bucket.
 */
export class LocalObjectStore implements ObjectStore {
  constructor(private readonly root: string) {}

  private file(key: string): string {
    if (!isValidObjectKey(key)) throw new Error(`invalid object key ${JSON.stringify(key)}`)
    return path.join(this.root, ...key.split('/'))
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    const file = this.file(key)
    await mkdir(path.dirname(file), { recursive: true })
    const temporary = `${file}.${process.pid}.${Date.now()}.tmp`
    await writeFile(`${file}${CONTENT_TYPE_SUFFIX}`, contentType)
    await writeFile(temporary, body)
    await rename(temporary, file)
  }

  async get(key: string): Promise<{ body: Buffer; contentType: string } | undefined> {
    if (!isValidObjectKey(key)) return undefined
    const file = this.file(key)
    try {
      const body = await readFile(file)
      const contentType = await readFile(`${file}${CONTENT_TYPE_SUFFIX}`, 'utf8').catch(
        () => 'application/octet-stream',
      )
      return { body, contentType }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
  }

  async delete(key: string): Promise<void> {
    const file = this.file(key)
    await rm(file, { force: true })
    await rm(`${file}${CONTENT_TYPE_SUFFIX}`, { force: true })
  }
}
