import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { Value, ValueErrorType } from '@sinclair/typebox/value'
import { parse as parseYaml } from 'yaml'
import { parseListenAddress } from './listen-address.js'
import { ConfigSchema, configKeys, type Config, type Leaf } from './schema.js'
import { StartupRefusal } from '../shared/startup-refusal.js'
import { egressRulesProblems, NO_EGRESS_RULES } from '../shared/egress-cidrs.js'

export class ConfigError extends StartupRefusal {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

export interface ConfigSources {
  /** Explicit file (`--config`); when absent, `podyard.yaml` in cwd is read if it exists. */
  configFile?: string | undefined
  env?: NodeJS.ProcessEnv
  /** Flag values keyed by the flag names of `configKeys` (camelCase). */
  flags?: Record<string, unknown>
  cwd?: string
}

type Plain = Record<string, unknown>

function setPath(target: Plain, dotted: string, value: unknown): void {
  const parts = dotted.split('.')
  let node = target
  for (const part of parts.slice(0, -1)) {
    if (typeof node[part] !== 'object' || node[part] === null) node[part] = {}
    node = node[part] as Plain
  }
  node[parts[parts.length - 1]!] = value
}

function coerce(raw: string, type: Leaf): unknown {
  if (type === 'list') {
    return raw
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '')
  }
  if (type === 'integer' && /^-?\d+$/.test(raw.trim())) return Number(raw.trim())
  if (type === 'boolean' && /^(true|false)$/i.test(raw.trim())) {
    return raw.trim().toLowerCase() === 'true'
  }
  return raw
}

function readFile(file: string): Plain {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`config: cannot read ${file}: ${(error as Error).message}`)
  }
  let parsed: unknown
  try {
    parsed = parseYaml(text)
  } catch (error) {
    throw new ConfigError(`config: ${file} is not valid YAML: ${(error as Error).message}`)
  }
  if (parsed === null || parsed === undefined) return {}
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`config: ${file} must hold a mapping of keys to values`)
  }
  return parsed as Plain
}

/**
 * The values of a union of literals (an enum: TypeBox's "Expected union value" says too
 * little), quoted and separated by commas; undefined for any other schema.
 */
function literalChoices(schema: { anyOf?: Array<{ const?: unknown }> }): string | undefined {
  const variants = schema.anyOf
  if (!variants?.every((variant) => 'const' in variant)) return undefined
  return variants.map((variant) => JSON.stringify(variant.const)).join(', ')
}

/**
 * Layers defaults < file < environment < flags, then validates once. An invalid value is
 * reported with its key and where it came from, so the operator knows what to fix.
 */
export function loadConfig(sources: ConfigSources = {}): Readonly<Config> {
  const env = sources.env ?? process.env
  const cwd = sources.cwd ?? process.cwd()
  const origin = new Map<string, string>()
  const merged: Plain = {}

  const explicitFile = sources.configFile ?? env.PODYARD_CONFIG
  const file = explicitFile
    ? path.resolve(cwd, explicitFile)
    : existsSync(path.join(cwd, 'podyard.yaml'))
      ? path.join(cwd, 'podyard.yaml')
      : undefined
  if (file) {
    const fromFile = readFile(file)
    Object.assign(merged, structuredClone(fromFile))
    const visit = (node: Plain, prefix: string) => {
      for (const [key, value] of Object.entries(node)) {
        const dotted = prefix ? `${prefix}.${key}` : key
        origin.set(dotted, `file ${file}`)
        if (value && typeof value === 'object' && !Array.isArray(value))
          visit(value as Plain, dotted)
      }
    }
    visit(fromFile, '')
  }

  for (const key of configKeys) {
    const raw = env[key.env]
    if (raw !== undefined && raw !== '') {
      setPath(merged, key.path, coerce(raw, key.type))
      origin.set(key.path, `environment variable ${key.env}`)
    }
  }

  for (const key of configKeys) {
    const value = key.flag ? sources.flags?.[key.flag] : undefined
    if (value !== undefined) {
      setPath(merged, key.path, typeof value === 'string' ? coerce(value, key.type) : value)
      origin.set(key.path, `flag --${key.flag!.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`)
    }
  }

  const withDefaults = Value.Default(ConfigSchema, merged) as Plain
  const problems = [...Value.Errors(ConfigSchema, withDefaults)].map((error) => {
    const dotted = error.path.replace(/^\//, '').replaceAll('/', '.')
    // An entry of a list came with the list.
    const from = origin.get(dotted) ?? origin.get(dotted.replace(/\.\d+$/, ''))
    const choices = literalChoices(error.schema as { anyOf?: Array<{ const?: unknown }> })
    const problem =
      error.type === ValueErrorType.ObjectAdditionalProperties
        ? 'unknown key'
        : choices
          ? `must be one of ${choices}, got ${JSON.stringify(error.value)}`
          : `${error.message}, got ${JSON.stringify(error.value)}`
    return `${dotted}: ${problem}${from ? ` (from ${from})` : ''}`
  })
  if (problems.length > 0) {
    throw new ConfigError(`invalid configuration: ${[...new Set(problems)].join('; ')}`)
  }

  const config = withDefaults as Config
  const jobApiUrl = config.workers.jobApiUrl
  if (jobApiUrl !== '' && !/^https?:$/.test(URL.parse(jobApiUrl)?.protocol ?? '')) {
    const from = origin.get('workers.jobApiUrl')
    throw new ConfigError(
      `invalid configuration: workers.jobApiUrl: must be an http(s) URL, got ${JSON.stringify(jobApiUrl)}${from ? ` (from ${from})` : ''}`,
    )
  }
  const egressProblems = egressRulesProblems(config.containment.egress ?? NO_EGRESS_RULES)
  if (egressProblems.length > 0) {
    const from = ['allow', 'deny']
      .map((key) => origin.get(`containment.egress.${key}`))
      .filter(Boolean)
    throw new ConfigError(
      `invalid configuration: ${egressProblems.join('; ')}${from.length > 0 ? ` (from ${from.join(', ')})` : ''}`,
    )
  }
  const metricsListen = config.metrics.listen
  if (metricsListen !== '' && !parseListenAddress(metricsListen)) {
    const from = origin.get('metrics.listen')
    throw new ConfigError(
      `invalid configuration: metrics.listen: expected host:port (127.0.0.1:9464, [::1]:9464), got ${JSON.stringify(metricsListen)}${from ? ` (from ${from})` : ''}`,
    )
  }
  const dataDir = path.resolve(cwd, config.dataDir)
  return deepFreeze({
    ...config,
    dataDir,
    storeUrl: config.storeUrl || `sqlite:${path.join(dataDir, 'podyard.db')}`,
  })
}

/** Frozen all the way down: no part of the platform can change the configuration it was given. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const key of Reflect.ownKeys(value))
      deepFreeze((value as Record<PropertyKey, unknown>)[key])
    Object.freeze(value)
  }
  return value
}
