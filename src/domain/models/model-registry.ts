import {
  isValidModelId,
  MODEL_KINDS,
  PRICE_UNITS,
  type ModelDefinition,
  type ModelKind,
  type ModelWorkerSettings,
  type PriceUnit,
} from './model.js'
import { StartupRefusal } from '../../shared/startup-refusal.js'

/**
 * The image of the reference model workers. The process driver runs it as Node.js on the
 * worker program in podyard's own build (`dist/models/reference-worker.js`), which the
 * platform mounts read-only into its model workers at MODEL_CODE_PATH (docs/public-endpoints.md,
 * "How the models run").
 */
export const REFERENCE_MODEL_IMAGE = 'podyard/reference-models:1'
/** Where a model worker sees podyard's build (`dist/`), read-only. */
export const MODEL_CODE_PATH = '/opt/podyard'
/** The variable the process driver sets to where MODEL_CODE_PATH really is (see mountEnvName). */
const MODEL_CODE_ENV = 'PODYARD_MOUNT_OPT_PODYARD'

/** What the process driver runs for the reference model image. `node` is Node.js's path. */
export function modelImageCommands(node: string): Record<string, string> {
  return {
    [REFERENCE_MODEL_IMAGE]: `exec ${JSON.stringify(node)} "\${${MODEL_CODE_ENV}:-${MODEL_CODE_PATH}}/models/reference-worker.js"`,
  }
}

/** Endpoint settings of a model that does not name its own. */
export const DEFAULT_MODEL_WORKER: ModelWorkerSettings = {
  image: REFERENCE_MODEL_IMAGE,
  args: '',
  env: {},
  cpu: { id: 'cpu3c', vcpuCount: 2 },
  // Scale from zero: a reference worker starts in well under a second.
  workers: { min: 0, max: 2, idleTimeout: 60 },
  timeoutMs: 120_000,
}

/** The models that ship with the platform: reference stand-ins that work offline. */
export const DEFAULT_MODELS: readonly ModelDefinition[] = [
  {
    id: 'podyard-reference-image',
    kind: 'image',
    name: 'podyard reference image renderer',
    description:
      'A deterministic stand-in for an image model, not AI: draws the prompt as text on a ' +
      'background derived from it, as a PNG of the asked size. Back a model with a real image ' +
      'server through `server.url` (docs/public-endpoints.md).',
    // RunPod's public FLUX.1 [schnell] price per megapixel.
    price: { unit: 'megapixel', usd: 0.0024 },
    reference: true,
    server: null,
    worker: DEFAULT_MODEL_WORKER,
  },
  {
    id: 'podyard-reference-text',
    kind: 'text',
    name: 'podyard reference text generator',
    description:
      'A deterministic stand-in for a language model, not AI: answers with words chosen by a ' +
      'hash of the prompt. Back a model with an OpenAI-compatible server through `server.url`.',
    price: { unit: '1k-tokens', usd: 0.0002 },
    reference: true,
    server: null,
    worker: DEFAULT_MODEL_WORKER,
  },
]

export class ModelConfigError extends StartupRefusal {
  constructor(message: string) {
    super(message)
    this.name = 'ModelConfigError'
  }
}

type Plain = Record<string, unknown>
const isObject = (value: unknown): value is Plain =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const ENTRY_KEYS = new Set([
  'enabled',
  'kind',
  'name',
  'description',
  'price',
  'server',
  'image',
  'args',
  'env',
  'cpu',
  'workers',
  'timeoutMs',
])

function wholeNumber(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max
}

/**
 * The model registry: the defaults, then each source's entries in order (a config file, then
 * the config's `models.definitions`), keyed by model id. An entry for a known id changes only
 * the fields it gives; `enabled: false` removes the model; a new id needs `kind` and `price`.
 * Every problem is reported with the entry's location.
 */
export function buildModelRegistry(
  sources: ReadonlyArray<{ origin: string; entries: unknown }>,
  defaults: readonly ModelDefinition[] = DEFAULT_MODELS,
): ModelDefinition[] {
  const models = new Map(defaults.map((m) => [m.id, structuredClone(m)]))
  const problems: string[] = []
  for (const source of sources) {
    if (source.entries === undefined || source.entries === null) continue
    if (!isObject(source.entries)) {
      problems.push(`${source.origin}: must be a mapping of model id to definition`)
      continue
    }
    for (const [id, entry] of Object.entries(source.entries)) {
      const at = `${source.origin}.${id}`
      const before = problems.length
      if (!isValidModelId(id)) {
        problems.push(
          `${at}: a model id is lowercase letters, digits, dots and hyphens, with at least one hyphen`,
        )
        continue
      }
      if (!isObject(entry)) {
        problems.push(`${at}: must be a mapping`)
        continue
      }
      for (const key of Object.keys(entry)) {
        if (!ENTRY_KEYS.has(key)) problems.push(`${at}.${key}: unknown key`)
      }
      if (entry.enabled === false) {
        models.delete(id)
        continue
      }
      const current = models.get(id)
      const next = mergeEntry(at, id, entry, current, problems)
      if (next && problems.length === before) models.set(id, next)
    }
  }
  if (problems.length > 0) throw new ModelConfigError(`invalid models: ${problems.join('; ')}`)
  return [...models.values()]
}

function mergeEntry(
  at: string,
  id: string,
  entry: Plain,
  current: ModelDefinition | undefined,
  problems: string[],
): ModelDefinition | undefined {
  if (entry.enabled !== undefined && typeof entry.enabled !== 'boolean') {
    problems.push(`${at}.enabled: must be true or false`)
  }
  const kind = entry.kind ?? current?.kind
  if (!MODEL_KINDS.includes(kind as ModelKind)) {
    problems.push(`${at}.kind: must be one of ${MODEL_KINDS.join(', ')}`)
  }
  const price = entry.price === undefined ? current?.price : entry.price
  if (
    !isObject(price) ||
    !PRICE_UNITS.includes(price.unit as PriceUnit) ||
    typeof price.usd !== 'number' ||
    !Number.isFinite(price.usd) ||
    price.usd < 0 ||
    price.usd > 1000
  ) {
    problems.push(
      `${at}.price: must be {unit: ${PRICE_UNITS.join(' | ')}, usd: a number from 0 to 1000}`,
    )
  } else if (
    (price.unit === 'megapixel' && kind !== 'image') ||
    (price.unit === '1k-tokens' && kind !== 'text')
  ) {
    problems.push(
      `${at}.price.unit: ${String(price.unit)} does not apply to ${String(kind)} models`,
    )
  }
  for (const key of ['name', 'description', 'image', 'args'] as const) {
    if (entry[key] !== undefined && typeof entry[key] !== 'string') {
      problems.push(`${at}.${key}: must be a string`)
    }
  }
  let server = current?.server ?? null
  if (entry.server !== undefined) {
    if (entry.server === null) server = null
    else if (!isObject(entry.server) || typeof entry.server.url !== 'string') {
      problems.push(`${at}.server: must be {url, model?, apiKey?}`)
    } else if (!/^https?:\/\//.test(entry.server.url) || !URL.canParse(entry.server.url)) {
      problems.push(`${at}.server.url: must be an http(s) URL`)
    } else {
      server = {
        url: entry.server.url.replace(/\/+$/, ''),
        model: typeof entry.server.model === 'string' ? entry.server.model : null,
        apiKey: typeof entry.server.apiKey === 'string' ? entry.server.apiKey : null,
      }
    }
  }
  const worker = structuredClone(current?.worker ?? DEFAULT_MODEL_WORKER)
  if (typeof entry.image === 'string') worker.image = entry.image
  if (typeof entry.args === 'string') worker.args = entry.args
  if (entry.env !== undefined) {
    if (!isObject(entry.env) || Object.values(entry.env).some((v) => typeof v !== 'string')) {
      problems.push(`${at}.env: must map names to strings`)
    } else worker.env = entry.env as Record<string, string>
  }
  if (entry.cpu !== undefined) {
    if (
      !isObject(entry.cpu) ||
      typeof entry.cpu.id !== 'string' ||
      !wholeNumber(entry.cpu.vcpuCount, 1, 512)
    ) {
      problems.push(`${at}.cpu: must be {id: a CPU flavor, vcpuCount}`)
    } else worker.cpu = { id: entry.cpu.id, vcpuCount: entry.cpu.vcpuCount }
  }
  if (entry.workers !== undefined) {
    const w = entry.workers
    const merged = isObject(w) ? { ...worker.workers, ...w } : undefined
    if (
      !merged ||
      !wholeNumber(merged.min, 0, 100) ||
      !wholeNumber(merged.max, 1, 100) ||
      !wholeNumber(merged.idleTimeout, 1, 3600) ||
      merged.min > merged.max
    ) {
      problems.push(`${at}.workers: must be {min 0..100, max 1..100 >= min, idleTimeout 1..3600}`)
    } else worker.workers = { min: merged.min, max: merged.max, idleTimeout: merged.idleTimeout }
  }
  if (entry.timeoutMs !== undefined) {
    if (!wholeNumber(entry.timeoutMs, 5_000, 3_600_000)) {
      problems.push(`${at}.timeoutMs: must be an integer from 5000 to 3600000`)
    } else worker.timeoutMs = entry.timeoutMs
  }
  if (!MODEL_KINDS.includes(kind as ModelKind) || !isObject(price)) return undefined
  const name = (entry.name as string | undefined) ?? current?.name ?? id
  return {
    id,
    kind: kind as ModelKind,
    name,
    description: (entry.description as string | undefined) ?? current?.description ?? '',
    price: { unit: price.unit as PriceUnit, usd: price.usd as number },
    // A model backed by a server, or new, is no longer the shipped stand-in.
    reference: (current?.reference ?? false) && server === null,
    server,
    worker,
  }
}

/** The environment a model's workers get besides RUNPOD_* (read by src/models/). */
export function modelWorkerEnv(model: ModelDefinition): Record<string, string> {
  return {
    ...model.worker.env,
    PODYARD_MODEL_ID: model.id,
    PODYARD_MODEL_KIND: model.kind,
    ...(model.server
      ? {
          PODYARD_MODEL_SERVER_URL: model.server.url,
          ...(model.server.model ? { PODYARD_MODEL_SERVER_MODEL: model.server.model } : {}),
          ...(model.server.apiKey ? { PODYARD_MODEL_SERVER_API_KEY: model.server.apiKey } : {}),
        }
      : {}),
  }
}
