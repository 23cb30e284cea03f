/**
 * Public models (spec "Public endpoints", docs/public-endpoints.md): models the platform runs on
 * its own serverless endpoints and any account with credits may call at
 * `/v2/<model_id>/runsync`. This file holds what a model is, the bounds of its input, and its
 * price rule; nothing here does I/O.
 */
import { estimateTokens } from '../../shared/token-estimate.js'
import { NANO_PER_USD } from '../billing/credits.js'

export const MODEL_KINDS = ['image', 'video', 'audio', 'text'] as const
export type ModelKind = (typeof MODEL_KINDS)[number]

/** What a price is counted in: image megapixels, 1 000 text tokens, or a flat price per job. */
export const PRICE_UNITS = ['megapixel', '1k-tokens', 'job'] as const
export type PriceUnit = (typeof PRICE_UNITS)[number]

export interface ModelPrice {
  unit: PriceUnit
  /** USD per unit. */
  usd: number
}

/**
 * Image bounds: 64 to 2048 pixels a side, a multiple of 8 (what diffusion models' latent
 * spaces need; RunPod's image endpoints take the same). 512 when the input leaves a side out.
 */
export const MIN_IMAGE_SIDE = 64
export const MAX_IMAGE_SIDE = 2048
export const IMAGE_SIDE_MULTIPLE = 8
export const DEFAULT_IMAGE_SIDE = 512
/** `seed: -1` asks for a random seed, as RunPod's image endpoints and their SDKs send it. */
export const RANDOM_SEED = -1
/** The largest seed a random one is drawn below (what the reference renderer hashes). */
export const MAX_SEED = 2 ** 31
/** `size`, as RunPod's image endpoints take it: `768*512` (their form) or `768x512`. */
export const SIZE_PATTERN = /^(\d{1,5})\s*[*xX]\s*(\d{1,5})$/
/** The longest prompt of any model, in characters. */
export const MAX_PROMPT_LENGTH = 10_000
/** Text: `max_tokens` bounds and default. */
export const MIN_MAX_TOKENS = 1
export const MAX_MAX_TOKENS = 4096
export const DEFAULT_MAX_TOKENS = 256
/** Text: at most this many chat messages. */
export const MAX_MESSAGES = 100

/**
 * A model id: lowercase letters, digits, dots and hyphens, with at least one hyphen, so that it
 * can never be a 14-character endpoint id (which has none), e.g.
 * `black-forest-labs-flux-1-schnell`. The job API also refuses the management API's reserved
 * first segments (`network-volumes`) as model ids when it starts.
 */
export const MODEL_ID_SHAPE = /^[a-z0-9][a-z0-9.-]*[a-z0-9]$/
export const MAX_MODEL_ID_LENGTH = 64

export function isValidModelId(id: string): boolean {
  return id.length <= MAX_MODEL_ID_LENGTH && id.includes('-') && MODEL_ID_SHAPE.test(id)
}

/** How the platform runs a model: the serverless endpoint it owns for it. */
export interface ModelWorkerSettings {
  /** The image of the endpoint's workers (the process driver maps it to a command). */
  image: string
  /** The workers' command; empty runs the image's command. */
  args: string
  env: Record<string, string>
  cpu: { id: string; vcpuCount: number }
  workers: { min: number; max: number; idleTimeout: number }
  /** Execution timeout of a job, ms. */
  timeoutMs: number
}

export interface ModelDefinition {
  id: string
  kind: ModelKind
  name: string
  description: string
  price: ModelPrice
  /**
   * A reference stand-in shipped with the platform (deterministic, not AI), as opposed to a
   * model backed by a real model server.
   */
  reference: boolean
  /**
   * An OpenAI-compatible server the worker calls instead of its reference code (base URL with
   * `/v1`, as OpenAI clients take it): `/chat/completions` for text, `/images/generations` for
   * images.
   */
  server: { url: string; model: string | null; apiKey: string | null } | null
  worker: ModelWorkerSettings
}

/** What `GET /v2/catalog/models` shows of a model: never its endpoint or workers. */
export interface ModelView {
  id: string
  kind: ModelKind
  name: string
  description: string
  price: ModelPrice
  reference: boolean
  input: Record<string, unknown>
}

/** The input schema a caller reads in the catalog, per kind. */
export function inputSchemaOf(kind: ModelKind): Record<string, unknown> {
  const prompt = { type: 'string', minLength: 1, maxLength: MAX_PROMPT_LENGTH }
  if (kind === 'image') {
    const side = {
      type: 'integer',
      minimum: MIN_IMAGE_SIDE,
      maximum: MAX_IMAGE_SIDE,
      multipleOf: IMAGE_SIDE_MULTIPLE,
      default: DEFAULT_IMAGE_SIDE,
    }
    return {
      type: 'object',
      required: ['prompt'],
      properties: {
        prompt,
        width: side,
        height: side,
        size: {
          type: 'string',
          pattern: SIZE_PATTERN.source,
          description: '<width>*<height> or <width>x<height>, instead of width and height',
        },
        seed: { type: 'integer', minimum: RANDOM_SEED, description: '-1: a random seed' },
      },
    }
  }
  if (kind === 'text') {
    return {
      type: 'object',
      description: 'give prompt or messages',
      properties: {
        prompt,
        messages: {
          type: 'array',
          maxItems: MAX_MESSAGES,
          items: {
            type: 'object',
            required: ['role', 'content'],
            properties: {
              role: { enum: ['system', 'user', 'assistant'] },
              content: { type: 'string' },
            },
          },
        },
        max_tokens: {
          type: 'integer',
          minimum: MIN_MAX_TOKENS,
          maximum: MAX_MAX_TOKENS,
          default: DEFAULT_MAX_TOKENS,
        },
      },
    }
  }
  return { type: 'object', required: ['prompt'], properties: { prompt } }
}

export function modelView(model: ModelDefinition): ModelView {
  return {
    id: model.id,
    kind: model.kind,
    name: model.name,
    description: model.description,
    price: { ...model.price },
    reference: model.reference,
    input: inputSchemaOf(model.kind),
  }
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

/** A validated input with its defaults filled in: what the worker receives. */
export type ModelInput =
  | { kind: 'image'; prompt: string; width: number; height: number; seed?: number }
  | { kind: 'text'; messages: ChatMessage[]; max_tokens: number }
  | { kind: 'video' | 'audio'; prompt: string }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function promptProblems(value: unknown, field: string, required: boolean): string[] {
  if (value === undefined) return required ? [`${field}: required`] : []
  if (typeof value !== 'string') return [`${field}: must be a string`]
  if (value.trim() === '') return [`${field}: must not be empty`]
  if (value.length > MAX_PROMPT_LENGTH) {
    return [`${field}: must be at most ${MAX_PROMPT_LENGTH} characters`]
  }
  return []
}

function sideProblems(value: unknown, field: string): string[] {
  if (value === undefined) return []
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    return [`${field}: must be an integer, got ${JSON.stringify(value)}`]
  }
  const problems: string[] = []
  if (value < MIN_IMAGE_SIDE || value > MAX_IMAGE_SIDE) {
    problems.push(`${field}: must be between ${MIN_IMAGE_SIDE} and ${MAX_IMAGE_SIDE}, got ${value}`)
  }
  if (value % IMAGE_SIDE_MULTIPLE !== 0) {
    problems.push(`${field}: must be a multiple of ${IMAGE_SIDE_MULTIPLE}, got ${value}`)
  }
  return problems
}

export type InputResult = { ok: true; input: ModelInput } | { ok: false; problems: string[] }

/** `size: "768*512"` (or `768x512`) -> width and height; problems when it is not of that form. */
function sizeOf(value: unknown): { width?: number; height?: number; problems: string[] } {
  if (value === undefined) return { problems: [] }
  const match = typeof value === 'string' ? SIZE_PATTERN.exec(value.trim()) : null
  if (!match) {
    return {
      problems: [
        `input.size: must be <width>*<height> (or <width>x<height>), e.g. 1024*768, got ${JSON.stringify(value)}`,
      ],
    }
  }
  return { width: Number(match[1]), height: Number(match[2]), problems: [] }
}

/**
 * The job input checked against the model's kind (docs/public-endpoints.md, "Input"): each
 * failing field as `input.<field>: <problem>`. Unknown fields are ignored, as RunPod's
 * endpoints do.
 */
export function validateModelInput(
  kind: ModelKind,
  raw: unknown,
  /** Draws the seed of `seed: -1`; injected so that tests can pin it. */
  randomSeed: () => number = () => Math.floor(Math.random() * MAX_SEED),
): InputResult {
  if (!isObject(raw)) return { ok: false, problems: ['input: must be a JSON object'] }
  if (kind === 'image') {
    const size = sizeOf(raw.size)
    const problems = [...promptProblems(raw.prompt, 'input.prompt', true), ...size.problems]
    // `width` and `height` win over `size`, which fills only a side they leave out: RunPod's
    // AI SDK provider sends `size` on every call (1328*1328 when the caller names none) and
    // the caller's own options beside it, and RunPod's width-and-height endpoints (Flux) pass
    // over `size` (docs/public-endpoints.md, "Input").
    const width = raw.width ?? size.width
    const height = raw.height ?? size.height
    const field = (name: 'width' | 'height') =>
      raw[name] === undefined && size.width !== undefined ? 'input.size' : `input.${name}`
    problems.push(...sideProblems(width, field('width')), ...sideProblems(height, field('height')))
    if (
      raw.seed !== undefined &&
      (typeof raw.seed !== 'number' || !Number.isSafeInteger(raw.seed) || raw.seed < RANDOM_SEED)
    ) {
      problems.push('input.seed: must be a non-negative integer, or -1 for a random one')
    }
    if (problems.length > 0) return { ok: false, problems }
    return {
      ok: true,
      input: {
        kind,
        prompt: raw.prompt as string,
        width: (width as number | undefined) ?? DEFAULT_IMAGE_SIDE,
        height: (height as number | undefined) ?? DEFAULT_IMAGE_SIDE,
        ...(raw.seed === RANDOM_SEED
          ? { seed: randomSeed() }
          : raw.seed !== undefined
            ? { seed: raw.seed as number }
            : {}),
      },
    }
  }
  if (kind === 'text') return validateTextInput(raw)
  const problems = promptProblems(raw.prompt, 'input.prompt', true)
  if (problems.length > 0) return { ok: false, problems }
  return { ok: true, input: { kind, prompt: raw.prompt as string } }
}

function validateTextInput(raw: Record<string, unknown>): InputResult {
  const problems: string[] = []
  const messages: ChatMessage[] = []
  if (raw.prompt === undefined && raw.messages === undefined) {
    problems.push('input.prompt: required (or give input.messages)')
  }
  if (raw.prompt !== undefined && raw.messages !== undefined) {
    problems.push('input: give prompt or messages, not both')
  }
  problems.push(...promptProblems(raw.prompt, 'input.prompt', false))
  if (typeof raw.prompt === 'string') messages.push({ role: 'user', content: raw.prompt })
  if (raw.messages !== undefined) {
    if (!Array.isArray(raw.messages) || raw.messages.length === 0) {
      problems.push('input.messages: must be a non-empty array')
    } else if (raw.messages.length > MAX_MESSAGES) {
      problems.push(`input.messages: must have at most ${MAX_MESSAGES} messages`)
    } else {
      raw.messages.forEach((message: unknown, index) => {
        const field = `input.messages[${index}]`
        if (
          !isObject(message) ||
          !['system', 'user', 'assistant'].includes(message.role as string) ||
          typeof message.content !== 'string'
        ) {
          problems.push(`${field}: must be {role: system|user|assistant, content: string}`)
        } else if (message.content.length > MAX_PROMPT_LENGTH) {
          problems.push(`${field}.content: must be at most ${MAX_PROMPT_LENGTH} characters`)
        } else {
          messages.push({ role: message.role as ChatMessage['role'], content: message.content })
        }
      })
    }
  }
  const maxTokens = raw.max_tokens ?? DEFAULT_MAX_TOKENS
  if (
    typeof maxTokens !== 'number' ||
    !Number.isInteger(maxTokens) ||
    maxTokens < MIN_MAX_TOKENS ||
    maxTokens > MAX_MAX_TOKENS
  ) {
    problems.push(
      `input.max_tokens: must be an integer between ${MIN_MAX_TOKENS} and ${MAX_MAX_TOKENS}`,
    )
  }
  if (problems.length > 0) return { ok: false, problems }
  return { ok: true, input: { kind: 'text', messages, max_tokens: maxTokens as number } }
}

/** Prompt tokens of a text input, as the platform counts them before the job runs. */
export function promptTokensOf(messages: ChatMessage[]): number {
  return messages.reduce((sum, m) => sum + estimateTokens(m.content), 0)
}

/** nano-USD of `units` at `usd` per unit, rounded up to a whole nano-USD. */
function priceNano(usd: number, units: number): number {
  return Math.ceil(Math.round(usd * NANO_PER_USD) * units - 1e-9)
}

/**
 * The most a job can cost, checked against the balance before it runs: exact for images
 * (megapixels asked) and flat-priced jobs; for text the prompt's tokens plus `max_tokens`.
 */
export function maxPriceNano(price: ModelPrice, input: ModelInput): number {
  if (price.unit === 'job') return priceNano(price.usd, 1)
  if (price.unit === 'megapixel') {
    const pixels = input.kind === 'image' ? input.width * input.height : 0
    return priceNano(price.usd, pixels / 1_000_000)
  }
  const tokens =
    input.kind === 'text' ? promptTokensOf(input.messages) + input.max_tokens : DEFAULT_MAX_TOKENS
  return priceNano(price.usd, tokens / 1000)
}

/** Token usage as a worker reports it (OpenAI's `usage`). */
export interface TokenUsage {
  prompt_tokens: number
  completion_tokens: number
}

/**
 * What a finished job costs. Text is priced by the usage its worker reports, capped at the
 * maximum the caller was checked for (a worker cannot charge more than was allowed); a text job
 * whose worker reports no usage costs the maximum. Everything else costs its maximum.
 */
export function finalPriceNano(
  price: ModelPrice,
  input: ModelInput,
  usage: TokenUsage | undefined,
): number {
  const max = maxPriceNano(price, input)
  if (price.unit !== '1k-tokens' || usage === undefined) return max
  return Math.min(max, priceNano(price.usd, (usage.prompt_tokens + usage.completion_tokens) / 1000))
}
