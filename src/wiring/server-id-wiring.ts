import path from 'node:path'
import type { Logger } from 'pino'
import { newServerId, readServerIdFile, SERVER_ID_FILE } from '../runtime/docker/server-id.js'
import type { Store } from '../store/open-store.js'
import { KyselyServerIdRepo } from '../store/server-id-repo.js'

/** How long the former ids are used before they are read again (another replica may add one). */
export const FORMER_IDS_REREAD_MS = 5_000

export interface PlatformServerIds {
  /** The id every container, volume and network created from now on is labelled with. */
  serverId: string
  /** The platform's former ids (DockerDriverOptions.formerServerIds), read again now and then. */
  formerServerIds: () => Promise<readonly string[]>
}

/**
 * The platform's server id, from the database, so that replicas with data directories of
 * their own recognise each other's containers (docs/runtime.md, "The server id"):
 * - the first start of a platform stores the id of its data directory's `server-id` file (kept
 *   by versions before the id moved into the database), or a new one;
 * - later starts use the stored one. A file that names another id (replicas that each had their
 *   own) is recorded as a former id, whose containers the Docker driver adopts, with a warning.
 * Run under the startup lock; the store's insert-then-read makes it safe without it too.
 */
export async function platformServerIds(
  store: Store,
  dataDir: string,
  logger: Logger,
): Promise<PlatformServerIds> {
  const repo = new KyselyServerIdRepo(store.db)
  const file = path.join(dataDir, SERVER_ID_FILE)
  const fromFile = readServerIdFile(dataDir)
  const { id, claimed } = await repo.claim(fromFile ?? newServerId())
  if (claimed) {
    logger.info(
      { serverId: id, ...(fromFile ? { file } : {}) },
      fromFile
        ? 'stored the server id of the data directory in the database: every replica uses it'
        : 'stored a new server id in the database: every replica uses it',
    )
  } else if (fromFile !== undefined && fromFile !== id) {
    await repo.addFormer(fromFile)
    logger.warn(
      { serverId: id, fileServerId: fromFile, file },
      `${file} names the server id ${fromFile}, but this platform's database has ${id}: ` +
        `${id} labels what is created from now on, and the Docker driver adopts the ` +
        `containers and volumes labelled ${fromFile} as the platform's (docs/runtime.md, ` +
        `"The server id"). Delete ${file} once no container is labelled podyard.server=${fromFile}`,
    )
  }
  return { serverId: id, formerServerIds: reread(repo, logger) }
}

/**
 * The former ids as last read, read again once FORMER_IDS_REREAD_MS have passed; a failed read
 * keeps the last ones (a driver call must not fail because the database blinked).
 */
function reread(repo: KyselyServerIdRepo, logger: Logger): () => Promise<readonly string[]> {
  let known: readonly string[] = []
  let readAt = Number.NEGATIVE_INFINITY
  let reading: Promise<readonly string[]> | undefined
  return () => {
    if (performance.now() - readAt < FORMER_IDS_REREAD_MS) return Promise.resolve(known)
    reading ??= repo
      .formerIds()
      .then(
        (ids) => (known = ids),
        (error: unknown) => {
          logger.warn({ err: error }, 'reading the former server ids failed; using the last ones')
          return known
        },
      )
      .finally(() => {
        readAt = performance.now()
        reading = undefined
      })
    return reading
  }
}
