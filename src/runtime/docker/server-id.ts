import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'

/** The file under the data directory that keeps this server's id across restarts. */
export const SERVER_ID_FILE = 'server-id'

/**
 * This server's id for the docker driver's labels, generated on first start and kept in
 * `<dataDir>/server-id`: a restarted server must recognise (adopt) its own containers, and two
 * servers on one engine must never touch each other's.
 */
export function loadServerId(dataDir: string): string {
  const file = path.join(dataDir, SERVER_ID_FILE)
  try {
    const id = readFileSync(file, 'utf8').trim()
    if (/^[a-z0-9][a-z0-9-]{0,62}$/.test(id)) return id
    throw new Error(`${file} does not hold a server id (lowercase letters, digits and -)`)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const id = `srv-${randomBytes(6).toString('hex')}`
  mkdirSync(dataDir, { recursive: true })
  writeFileSync(file, `${id}\n`, { flag: 'wx' })
  return id
}
