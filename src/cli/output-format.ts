import { createRequire } from 'node:module'
import { InvalidArgumentError, Option, type Command } from 'commander'
import type * as Yaml from 'yaml'

export type OutputFormat = 'json' | 'yaml' | 'table'
const FORMATS: OutputFormat[] = ['json', 'yaml', 'table']

/** Commands whose --json prints JSON lines as things happen, not a document: no --output. */
const JSON_LINES_ONLY = new Set(['serve', 'dev'])

/**
 * `-o, --output json|yaml|table` (runpodctl's flag) on every command that has `--json`, which
 * stays as the short form of `--output json`. Added after the commands are, by walking the tree.
 */
export function addOutputOptions(program: Command): void {
  const visit = (command: Command) => {
    const hasJson = command.options.some((option) => option.long === '--json')
    if (hasJson && !JSON_LINES_ONLY.has(command.name())) {
      command.addOption(
        new Option(
          '-o, --output <format>',
          'output format (default table; --json is json)',
        ).choices(FORMATS),
      )
    }
    command.commands.forEach(visit)
  }
  program.commands.forEach(visit)
}

/**
 * Before an action runs: `--output json|yaml` turns its --json on (yaml is the JSON, converted
 * as printed); `--json` with `--output table` or `yaml` is a contradiction.
 */
export function resolveOutput(command: Command): OutputFormat | undefined {
  const { json, output } = command.opts<{ json?: boolean; output?: OutputFormat }>()
  if (output === undefined) return json ? 'json' : undefined
  if (json && output !== 'json') {
    throw new InvalidArgumentError(`--json is --output json: it cannot go with --output ${output}`)
  }
  if (output !== 'table') command.setOptionValue('json', true)
  return output
}

/** The output format asked for on the command line, read before commander parses it. */
export function outputFormatOf(argv: readonly string[]): OutputFormat | undefined {
  const end = argv.indexOf('--')
  const args = end < 0 ? argv : argv.slice(0, end)
  let format: OutputFormat | undefined
  args.forEach((arg, i) => {
    const value =
      arg === '--json'
        ? 'json'
        : arg === '--output' || arg === '-o'
          ? args[i + 1]
          : arg.startsWith('--output=')
            ? arg.slice('--output='.length)
            : /^-o[a-z]/.test(arg)
              ? arg.slice(2)
              : undefined
    if (value !== undefined && (FORMATS as string[]).includes(value)) {
      format = value as OutputFormat
    }
  })
  return format
}

/** A JSON document the commands print, as YAML; text that is not JSON is left as it is. */
export function jsonToYaml(text: string): string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return text
  }
  return yamlModule().stringify(value, { lineWidth: 0 }).trimEnd()
}

/** The YAML library, loaded by the commands that read or print YAML only (about 25 ms). */
export function yamlModule(): typeof Yaml {
  return createRequire(import.meta.url)('yaml') as typeof Yaml
}
