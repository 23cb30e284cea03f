import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'
import { podyardUrlFrom, readRunpodctlConfig, runpodctlConfigPath } from './runpodctl-config.js'

/** A saved server and key, like runpodctl's config (docs/cli.md, "Profiles"). */
export interface Profile {
  url?: string
  apiKey?: string
}

export interface ProfilesFile {
  profiles: Record<string, Profile>
}

export const DEFAULT_PROFILE = 'default'
/** Profile names stay plain so they never need quoting in a shell or the file. */
const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

export class ProfileError extends Error {
  override name = 'ProfileError'
}

/**
 * Where the profiles are kept: `$PODYARD_PROFILES_FILE`, else
 * `$XDG_CONFIG_HOME/podyard/profiles.json`, else `~/.config/podyard/profiles.json`.
 */
export function profilesPath(env: Record<string, string | undefined> = process.env): string {
  if (env.PODYARD_PROFILES_FILE) return path.resolve(env.PODYARD_PROFILES_FILE)
  const configHome = env.XDG_CONFIG_HOME || path.join(homedir(), '.config')
  return path.join(configHome, 'podyard', 'profiles.json')
}

export function checkProfileName(name: string): string {
  if (!PROFILE_NAME.test(name)) {
    throw new ProfileError(
      `"${name}" is not a profile name: letters, digits, '.', '_' and '-', at most 64`,
    )
  }
  return name
}

/** The profiles in `file`; none when it does not exist. A file that is not ours is an error. */
export function readProfiles(file: string): ProfilesFile {
  if (!existsSync(file)) return { profiles: {} }
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new ProfileError(`${file} is not JSON: ${(error as Error).message}`)
  }
  const profiles = (parsed as { profiles?: unknown } | null)?.profiles
  if (typeof profiles !== 'object' || profiles === null || Array.isArray(profiles)) {
    throw new ProfileError(`${file} has no "profiles" object`)
  }
  const checked: Record<string, Profile> = {}
  for (const [name, value] of Object.entries(profiles as Record<string, unknown>)) {
    const { url, apiKey } = (value ?? {}) as Record<string, unknown>
    if (
      (url !== undefined && typeof url !== 'string') ||
      (apiKey !== undefined && typeof apiKey !== 'string')
    ) {
      throw new ProfileError(`${file}: profile "${name}": url and apiKey must be strings`)
    }
    checked[name] = {
      ...(url !== undefined ? { url } : {}),
      ...(apiKey !== undefined ? { apiKey } : {}),
    }
  }
  return { profiles: checked }
}

/**
 * Writes the profiles readable by their owner only (0600, in a folder of mode 0700 when it makes
 * one): they hold API keys. Written beside and renamed, so a crash never leaves half a file.
 */
export function writeProfiles(file: string, data: ProfilesFile): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 })
  // The mode given to writeFileSync is masked by the umask; this one is not.
  chmodSync(temporary, 0o600)
  renameSync(temporary, file)
}

/** What a client command talks to, and where each part came from. */
export interface ResolvedTarget {
  url: string
  apiKey: string | undefined
  /** Where the key came from, for error messages: `--api-key`, `$PODYARD_API_KEY`, `profile "x"`. */
  apiKeyFrom: string | undefined
  profile: string
}

/**
 * Flags win over the environment (`PODYARD_URL`, `PODYARD_API_KEY`), which wins over the
 * profile (`--profile`, else `$PODYARD_PROFILE`, else `default`), which wins over runpodctl's
 * settings (`RUNPOD_API_KEY` and `RUNPOD_API_URL`, then `~/.runpod/config.toml`), which win over
 * the default URL. A profile named explicitly must exist.
 */
export function resolveTarget(
  flags: { url?: string; apiKey?: string; profile?: string },
  env: Record<string, string | undefined>,
  defaultUrl: string,
): ResolvedTarget {
  const named = flags.profile ?? (env.PODYARD_PROFILE || undefined)
  const profile = named ?? DEFAULT_PROFILE
  const file = profilesPath(env)
  const saved = readProfiles(file).profiles[profile]
  if (named !== undefined && saved === undefined) {
    throw new ProfileError(
      `no profile "${named}" in ${file}: save one with podyard config set --profile ${named} --url ... --api-key-stdin`,
    )
  }
  // runpodctl's file is read only when podyard's own settings leave something out.
  let runpodctl: ReturnType<typeof readRunpodctlConfig> | undefined
  const runpodctlConfig = () => (runpodctl ??= readRunpodctlConfig(runpodctlConfigPath(env)))
  const [apiKey, apiKeyFrom] =
    flags.apiKey !== undefined
      ? [flags.apiKey, '--api-key']
      : env.PODYARD_API_KEY
        ? [env.PODYARD_API_KEY, '$PODYARD_API_KEY']
        : saved?.apiKey
          ? [saved.apiKey, `profile "${profile}"`]
          : env.RUNPOD_API_KEY
            ? [env.RUNPOD_API_KEY, '$RUNPOD_API_KEY']
            : runpodctlConfig().apiKey
              ? [runpodctlConfig().apiKey, `runpodctl's ${runpodctlConfig().file}`]
              : [undefined, undefined]
  const url =
    flags.url ??
    (env.PODYARD_URL ||
      saved?.url ||
      podyardUrlFrom(env.RUNPOD_API_URL) ||
      podyardUrlFrom(runpodctlConfig().restApiUrl) ||
      podyardUrlFrom(runpodctlConfig().apiUrl) ||
      defaultUrl)
  return { url, apiKey, apiKeyFrom, profile }
}

/** A key shown without its secret part: the prefix podyard's key lists show. */
export function maskKey(key: string | undefined): string | null {
  if (key === undefined) return null
  return `${key.slice(0, Math.min(12, Math.floor(key.length / 3)))}…`
}
