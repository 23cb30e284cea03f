import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'

/** What podyard reads of runpodctl's configuration: its key and, when set, its URLs. */
export interface RunpodctlConfig {
  file: string
  apiKey?: string
  /** `apiUrl` (runpodctl's GraphQL URL), `restApiUrl` (its REST URL). */
  apiUrl?: string
  restApiUrl?: string
}

/** runpodctl's file: `~/.runpod/config.toml` (viper writes its keys in lower case). */
export function runpodctlConfigPath(env: Record<string, string | undefined>): string {
  return path.join(env.HOME || homedir(), '.runpod', 'config.toml')
}

/**
 * The top-level string keys of runpodctl's config.toml (`apikey = "..."`), matched without
 * regard to case as viper does. Tables, arrays and other values are not read: runpodctl keeps
 * these three at the top as strings. A file that cannot be read counts as absent: it is
 * runpodctl's, a fallback, and never worth failing a podyard command for.
 */
export function readRunpodctlConfig(file: string): RunpodctlConfig {
  const config: RunpodctlConfig = { file }
  if (!existsSync(file)) return config
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return config
  }
  const wanted: Record<string, keyof Omit<RunpodctlConfig, 'file'>> = {
    apikey: 'apiKey',
    apiurl: 'apiUrl',
    restapiurl: 'restApiUrl',
  }
  for (const line of text.split(/\r?\n/)) {
    // A table header ends the top level.
    if (/^\s*\[/.test(line)) break
    const match = /^\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')\s*(?:#.*)?$/.exec(
      line,
    )
    if (!match) continue
    const key = wanted[match[1]!.toLowerCase()]
    if (key === undefined) continue
    const value = match[2] !== undefined ? unescapeBasic(match[2]) : match[3]!
    if (value !== '') config[key] = value
  }
  return config
}

/** A TOML basic string's escapes (keys and URLs rarely have any). */
function unescapeBasic(value: string): string {
  return value.replace(/\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)/g, (_, escape: string) => {
    if (escape.length > 1) return String.fromCodePoint(parseInt(escape.slice(1), 16))
    return { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', '"': '"', '\\': '\\' }[escape] ?? escape
  })
}

/**
 * podyard's base URL from one of runpodctl's: `RUNPOD_API_URL` or `restApiUrl` is REST at
 * `<base>/v1`, `apiUrl` GraphQL at `<base>/graphql`. RunPod's own hosts are not a podyard
 * server: a config that names them (runpodctl's default apiUrl) gives no URL.
 */
export function podyardUrlFrom(runpodctlUrl: string | undefined): string | undefined {
  if (!runpodctlUrl) return undefined
  let url: URL
  try {
    url = new URL(runpodctlUrl)
  } catch {
    return undefined
  }
  if (/(^|\.)runpod\.(io|ai|net)$/.test(url.hostname)) return undefined
  return `${url.origin}${url.pathname.replace(/\/+$/, '').replace(/\/(v1|graphql)$/, '')}`
}
