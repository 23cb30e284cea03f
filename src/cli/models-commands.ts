import { InvalidArgumentError, type Command } from 'commander'
import type { ModelJson } from '../client/api-client.js'
import { formatUsd } from './billing-commands.js'
import { clientFrom, withClientOptions, type ClientFlags } from './client-options.js'
import { formatTable } from './format-table.js'
import { inputOf } from './jobs-commands.js'
import { readProcessStdin } from './read-stdin.js'

export interface ModelsCommandDeps {
  print(text: string): void
  /** All of standard input as text, for `--input-file -`; defaults to process.stdin. */
  readStdin?(): Promise<string>
}

/** A model job as `/runsync` shows it (docs/public-endpoints.md, "Calling a model"). */
interface ModelJobJson {
  id: string
  status: string
  delayTime?: number
  executionTime?: number
  output?: Record<string, unknown>
  error?: string
}

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'])

function milliseconds(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected milliseconds, e.g. 60000')
  return Number(value)
}

/** `$0.0024/megapixel`, `$0.0002/1k-tokens`, `$0.01/job`. */
export function priceRule(price: ModelJson['price']): string {
  return `${formatUsd(price.usd)}/${price.unit}`
}

/** The input fields of a model's schema, required ones marked `*`: `prompt*, width, height`. */
export function inputFields(model: ModelJson): string {
  const required = new Set(model.input.required ?? [])
  return Object.keys(model.input.properties ?? {})
    .map((name) => (required.has(name) ? `${name}*` : name))
    .join(', ')
}

/** The human form of a finished model job: what the model made, then its cost. */
function jobText(job: ModelJobJson): string {
  const ms = (value: number | undefined) => (value === undefined ? '-' : `${value} ms`)
  const lines = [
    `Job ${job.id} ${job.status} (delay ${ms(job.delayTime)}, execution ${ms(job.executionTime)}).`,
  ]
  const output = job.output
  if (output !== undefined) {
    const { cost, ...rest } = output
    if (typeof rest.image_url === 'string') lines.push(`image_url: ${rest.image_url}`)
    else if (typeof rest.text === 'string') lines.push(`text: ${rest.text}`)
    else lines.push(`output: ${JSON.stringify(rest)}`)
    if (typeof cost === 'number') lines.push(`cost: ${formatUsd(cost)}`)
  }
  if (job.error !== undefined) lines.push(`error: ${job.error}`)
  return lines.join('\n')
}

/**
 * `podyard models list|run`: the public model endpoints (docs/public-endpoints.md, "CLI").
 * Thin: `list` is `GET /v2/catalog/models`, `run` one `POST /v2/<model_id>/runsync`.
 */
export function addModelsCommands(program: Command, deps: ModelsCommandDeps): void {
  const readStdin = deps.readStdin ?? readProcessStdin
  const models = program
    .command('models')
    .description('public models the platform runs (no endpoint of your own), on a running server')
  const json = (value: unknown) => JSON.stringify(value, null, 2)

  withClientOptions(
    models.command('list').description('the models: id, kind, price rule and input fields'),
  ).action(async (flags: ClientFlags) => {
    const list = await clientFrom(flags).models()
    if (flags.json) return deps.print(json(list))
    deps.print(
      formatTable(
        ['ID', 'KIND', 'PRICE', 'REFERENCE', 'INPUT (* required)', 'NAME'],
        list.map((m) => [
          m.id,
          m.kind,
          priceRule(m.price),
          m.reference ? 'yes (not AI)' : 'no',
          inputFields(m),
          m.name,
        ]),
      ),
    )
  })

  withClientOptions(
    models
      .command('run')
      .description(
        'run a model through /runsync and print what it made and its cost; non-zero unless it COMPLETED',
      )
      .argument('<model-id>'),
  )
    .option('--input <json>', 'the model input, a JSON object, e.g. \'{"prompt":"a red fox"}\'')
    .option('--input-file <path>', "read the input from a file ('-' for standard input)")
    .option(
      '--wait <ms>',
      'how long the server waits (1000 to 300000; default 90000)',
      milliseconds,
    )
    .action(
      async (
        modelId: string,
        flags: ClientFlags & { input?: string; inputFile?: string; wait?: number },
      ) => {
        const input = await inputOf(flags, readStdin)
        const job = await clientFrom(flags).runModel<ModelJobJson>(modelId, input, flags.wait)
        deps.print(flags.json ? json(job) : jobText(job))
        if (job.status === 'COMPLETED') return
        if (!TERMINAL.has(job.status)) {
          throw new Error(
            `job ${job.id} is still ${job.status} after the wait; follow it with GET /v2/${modelId}/status/${job.id}`,
          )
        }
        throw new Error(`job ${job.id} ended ${job.status}${job.error ? `: ${job.error}` : ''}`)
      },
    )
}
