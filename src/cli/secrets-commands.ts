import { readFile } from 'node:fs/promises'
import type { Command } from 'commander'
import {
  clientFrom,
  createdOutput,
  withClientOptions,
  withQuietOption,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'
import { passwordFromStdin } from './registries-commands.js'
import { readProcessStdin } from './read-stdin.js'

interface SecretJson {
  id: string
  name: string
  description: string | null
  createdAt: string
}

export interface SecretsCommandDeps {
  print(text: string): void
  /** Warnings for people; defaults to stderr, so stdout stays parseable. */
  warn?(text: string): void
  /** All of standard input as text, for --value-stdin; defaults to process.stdin. */
  readStdin?(): Promise<string>
}

const secretTable = (list: SecretJson[]) =>
  formatTable(
    ['ID', 'NAME', 'DESCRIPTION', 'CREATED'],
    list.map((s) => [s.id, s.name, s.description ?? '', s.createdAt]),
  )

interface CreateFlags extends ClientFlags {
  name: string
  description?: string
  value?: string
  valueFile?: string
  valueStdin?: boolean
  quiet?: boolean
}

/** Account secrets (`/v2/account/secrets`): a value goes in and is never shown again. */
export function addSecretsCommands(program: Command, deps: SecretsCommandDeps): void {
  const warn = deps.warn ?? ((text: string) => void process.stderr.write(`${text}\n`))
  const readStdin = deps.readStdin ?? readProcessStdin
  const secrets = program
    .command('secrets')
    .description('account secrets for env values ({{ RUNPOD_SECRET_<name> }}), on a running server')

  withClientOptions(
    secrets.command('list').description('your secrets (names, never values)'),
  ).action(async (flags: ClientFlags) => {
    const list = await clientFrom(flags).get<SecretJson[]>('/v2/account/secrets')
    deps.print(flags.json ? JSON.stringify(list, null, 2) : secretTable(list))
  })

  withQuietOption(
    withClientOptions(
      secrets
        .command('create')
        .description('store a secret (its value is never shown again)')
        .addHelpText(
          'after',
          '\nGive the value with --value-stdin or --value-file: --value lands in shell history.\n' +
            'Refer to it from a pod or endpoint env value as {{ RUNPOD_SECRET_<name> }}.',
        ),
    ),
  )
    .requiredOption('--name <name>', '1 to 64 letters, digits or underscores')
    .option('--description <text>', 'what it is for')
    .option('--value-stdin', 'read the value from standard input (recommended)')
    .option('--value-file <path>', 'read the value from a file')
    .option('--value <value>', 'the value (visible in process lists and shell history)')
    .action(async (flags: CreateFlags) => {
      const given = [flags.valueStdin, flags.valueFile !== undefined, flags.value !== undefined]
      if (given.filter(Boolean).length > 1) {
        throw new Error('give one of --value-stdin, --value-file or --value')
      }
      let value: string
      if (flags.valueStdin) value = passwordFromStdin(await readStdin())
      else if (flags.valueFile !== undefined) {
        value = passwordFromStdin(await readFile(flags.valueFile, 'utf8'))
      } else if (flags.value !== undefined) {
        warn(
          'warning: --value is visible to other users in process lists and lands in shell history; prefer --value-stdin or --value-file',
        )
        value = flags.value
      } else {
        throw new Error('give the value with --value-stdin (recommended), --value-file or --value')
      }
      if (value === '') throw new Error('the value is empty')
      const created = await clientFrom(flags).request<SecretJson>('POST', '/v2/account/secrets', {
        name: flags.name,
        value,
        ...(flags.description !== undefined ? { description: flags.description } : {}),
      })
      deps.print(
        createdOutput(
          flags,
          created,
          `Created secret ${created.id} (${created.name}); refer to it as {{ RUNPOD_SECRET_${created.name} }}.`,
        ),
      )
    })

  withClientOptions(
    secrets
      .command('delete')
      .description('delete a secret (pods and workers started later that refer to it fail)')
      .argument('<secret-id-or-name>'),
  ).action(async (idOrName: string, flags: ClientFlags) => {
    const client = clientFrom(flags)
    const list = await client.get<SecretJson[]>('/v2/account/secrets')
    const secret = list.find((s) => s.id === idOrName) ?? list.find((s) => s.name === idOrName)
    if (!secret) throw new Error(`no secret ${idOrName} in this account`)
    await client.request('DELETE', `/v2/account/secrets/${encodeURIComponent(secret.id)}`)
    deps.print(
      flags.json
        ? JSON.stringify({ id: secret.id, deleted: true })
        : `Deleted secret ${secret.id} (${secret.name}).`,
    )
  })
}
