import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'

/**
 * The file under the data directory where servers kept their id before it moved into the
 * database. It is only read now, on start, to carry an existing id over (wiring/server-id-wiring.ts):
 * containers labelled with it stay the platform's.
 */
export const SERVER_ID_FILE = 'server-id'

/** Lowercase letters, digits and `-`: it goes into container, volume and network names. */
const SERVER_ID = /^[a-z0-9][a-z0-9-]{0,62}$/

export function isServerId(id: string): boolean {
  return SERVER_ID.test(id)
}

/** A new server id, for a platform whose database has none yet. */
export function newServerId(): string {
  return `srv-${randomBytes(6).toString('hex')}`
}

/**
 * The id in `<dataDir>/server-id`, or undefined when there is no such file. Throws when the
 * file holds something else: starting with another id would orphan the containers of that one.
 */
export function readServerIdFile(dataDir: string): string | undefined {
  const file = path.join(dataDir, SERVER_ID_FILE)
  let id: string
  try {
    id = readFileSync(file, 'utf8').trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  if (isServerId(id)) return id
  throw new Error(`${file} does not hold a server id (lowercase letters, digits and -)`)
}
