import type { Kysely } from 'kysely'
import { SecretBoxError, type SecretBox } from '../domain/registries/secret-box.js'
import type { Database } from './database-schema.js'
import { KyselySettingsRepo } from './settings-repo.js'
import { StartupRefusal } from '../shared/startup-refusal.js'

export const ENCRYPTION_CHECK_SETTING = 'encryption.check'
const CHECK_PLAINTEXT = 'podyard encryption check'

export class EncryptionKeyMismatchError extends StartupRefusal {
  constructor(message: string) {
    super(message)
    this.name = 'EncryptionKeyMismatchError'
  }
}

export interface EncryptionCheckOptions {
  /** Where the key would be read from when not configured, named in the error. */
  keyFile?: string
}

/**
 * Fails the start when the encryption key is not the one the database was first used with.
 * Without this, a changed key would surface only later, as pulls failing with unreadable
 * registry passwords. The first start seals a known value; every later one must open it.
 */
export async function verifyEncryptionKey(
  db: Kysely<Database>,
  box: SecretBox,
  options: EncryptionCheckOptions = {},
): Promise<void> {
  const settings = new KyselySettingsRepo(db)
  // Insert-then-read, so two replicas starting together on one empty database agree on a value.
  await settings.setIfAbsent(ENCRYPTION_CHECK_SETTING, box.seal(CHECK_PLAINTEXT))
  const sealed = await settings.get(ENCRYPTION_CHECK_SETTING)
  let opened: string | undefined
  try {
    opened = sealed === undefined ? undefined : box.open(sealed)
  } catch (error) {
    if (!(error instanceof SecretBoxError)) throw error
  }
  if (opened !== CHECK_PLAINTEXT) {
    const file = options.keyFile ?? '<dataDir>/encryption.key'
    throw new EncryptionKeyMismatchError(
      'the encryption key does not match the one this database was created with, so stored ' +
        'registry passwords cannot be decrypted. Set the original key with the config key ' +
        `encryptionKey (env PODYARD_ENCRYPTION_KEY) or restore the key file ${file}. ` +
        'If the original key is lost, see docs/registries.md ("When the key is lost").',
    )
  }
}
