import type { Command } from 'commander'
import { DEFAULT_SERVER_URL } from './client-options.js'
import { formatTable } from './format-table.js'
import {
  checkProfileName,
  DEFAULT_PROFILE,
  maskKey,
  profilesPath,
  readProfiles,
  writeProfiles,
  type Profile,
} from './profiles.js'
import { UsageError } from './usage-error.js'
import { readProcessStdin } from './read-stdin.js'

export interface ConfigCommandDeps {
  print(text: string): void
  /** All of standard input as text, for --api-key-stdin; defaults to process.stdin. */
  readStdin?(): Promise<string>
}

interface ProfileFlags {
  profile?: string
  json?: boolean
}

/** A profile as shown: never the whole key. */
function shown(name: string, profile: Profile) {
  return { profile: name, url: profile.url ?? null, apiKey: maskKey(profile.apiKey) }
}

/**
 * `podyard config set|show|list|delete`: servers and keys saved per profile, like runpodctl's
 * config (docs/cli.md, "Profiles"). The file is readable by its owner only.
 */
export function addConfigCommands(program: Command, deps: ConfigCommandDeps): void {
  const readStdin = deps.readStdin ?? readProcessStdin
  const json = (value: unknown) => JSON.stringify(value, null, 2)
  const config = program
    .command('config')
    .description(
      `save a server URL and API key per profile (file: ${profilesPath().replace(process.env.HOME ?? '\0', '~')})`,
    )
  const profileName = (flags: ProfileFlags) =>
    checkProfileName(flags.profile ?? (process.env.PODYARD_PROFILE || DEFAULT_PROFILE))

  config
    .command('set')
    .description('save the URL and/or key of a profile (other fields of it are kept)')
    .option('--profile <name>', `the profile (default $PODYARD_PROFILE, else ${DEFAULT_PROFILE})`)
    .option('--url <url>', `the server's base URL, e.g. ${DEFAULT_SERVER_URL}`)
    .option('--api-key <key>', 'the API key (visible in process lists: prefer --api-key-stdin)')
    .option('--api-key-stdin', 'read the API key from standard input')
    .option('--json', 'print JSON')
    .action(
      async (flags: ProfileFlags & { url?: string; apiKey?: string; apiKeyStdin?: boolean }) => {
        const name = profileName(flags)
        if (flags.apiKey !== undefined && flags.apiKeyStdin) {
          throw new UsageError('give either --api-key-stdin or --api-key, not both')
        }
        const apiKey = flags.apiKeyStdin ? (await readStdin()).replace(/\r?\n$/, '') : flags.apiKey
        if (flags.url === undefined && apiKey === undefined) {
          throw new UsageError('give --url, --api-key-stdin or --api-key: there is nothing to save')
        }
        if (flags.url !== undefined && !URL.canParse(flags.url)) {
          throw new UsageError(`--url: "${flags.url}" is not a URL, e.g. ${DEFAULT_SERVER_URL}`)
        }
        if (apiKey !== undefined && apiKey.trim() === '')
          throw new UsageError('the API key is empty')
        const file = profilesPath()
        const data = readProfiles(file)
        const profile: Profile = {
          ...data.profiles[name],
          ...(flags.url !== undefined ? { url: flags.url.replace(/\/+$/, '') } : {}),
          ...(apiKey !== undefined ? { apiKey } : {}),
        }
        data.profiles[name] = profile
        writeProfiles(file, data)
        deps.print(
          flags.json
            ? json({ ...shown(name, profile), file })
            : `Saved profile ${name} in ${file} (readable by you only).`,
        )
      },
    )

  config
    .command('show')
    .description('a profile: its URL and the start of its key')
    .option('--profile <name>', `the profile (default $PODYARD_PROFILE, else ${DEFAULT_PROFILE})`)
    .option('--json', 'print JSON')
    .action((flags: ProfileFlags) => {
      const name = profileName(flags)
      const file = profilesPath()
      const profile = readProfiles(file).profiles[name]
      if (profile === undefined) throw new UsageError(`no profile "${name}" in ${file}`)
      const view = shown(name, profile)
      deps.print(
        flags.json
          ? json({ ...view, file })
          : [
              `profile  ${name}`,
              `url      ${view.url ?? '-'}`,
              `api key  ${view.apiKey ?? '-'}`,
            ].join('\n'),
      )
    })

  config
    .command('list')
    .description('every profile')
    .option('--json', 'print JSON')
    .action((flags: ProfileFlags) => {
      const profiles = Object.entries(readProfiles(profilesPath()).profiles).map(([name, p]) =>
        shown(name, p),
      )
      deps.print(
        flags.json
          ? json(profiles)
          : formatTable(
              ['PROFILE', 'URL', 'API KEY'],
              profiles.map((p) => [p.profile, p.url, p.apiKey]),
            ),
      )
    })

  config
    .command('delete')
    .description('forget a profile')
    .argument('<profile>')
    .option('--json', 'print JSON')
    .action((name: string, flags: ProfileFlags) => {
      const file = profilesPath()
      const data = readProfiles(file)
      if (data.profiles[name] === undefined) throw new UsageError(`no profile "${name}" in ${file}`)
      delete data.profiles[name]
      writeProfiles(file, data)
      deps.print(flags.json ? json({ profile: name, deleted: true }) : `Deleted profile ${name}.`)
    })
}
