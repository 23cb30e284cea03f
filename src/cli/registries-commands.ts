import type { Command } from 'commander'
import {
  clientFrom,
  createdOutput,
  withClientOptions,
  withQuietOption,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'
import { UsageError } from './usage-error.js'
import { readProcessStdin } from './read-stdin.js'

interface RegistryJson {
  id: string
  name: string
}

export interface RegistriesCommandDeps {
  print(text: string): void
  /** Warnings for people; defaults to stderr, so stdout stays parseable. */
  warn?(text: string): void
  /** All of standard input as text, for --password-stdin; defaults to process.stdin. */
  readStdin?(): Promise<string>
}

/** Like `docker login --password-stdin`: one trailing line break is the shell's, not the password's. */
export function passwordFromStdin(text: string): string {
  return text.replace(/\r?\n$/, '')
}

const registryTable = (list: RegistryJson[]) =>
  formatTable(
    ['ID', 'NAME'],
    list.map((r) => [r.id, r.name]),
  )

export function addRegistriesCommands(program: Command, deps: RegistriesCommandDeps): void {
  const warn = deps.warn ?? ((text: string) => void process.stderr.write(`${text}\n`))
  const readStdin = deps.readStdin ?? readProcessStdin
  const registries = program
    .command('registries')
    .description('credentials for private container registries, on a running server')
  const path = (id: string) => `/v2/registries/${encodeURIComponent(id)}`

  withClientOptions(registries.command('list').description('your registry credentials')).action(
    async (flags: ClientFlags) => {
      const { registries: list } = await clientFrom(flags).get<{ registries: RegistryJson[] }>(
        '/v2/registries',
      )
      deps.print(flags.json ? JSON.stringify(list, null, 2) : registryTable(list))
    },
  )

  withClientOptions(
    registries.command('get').description('one registry credential').argument('<registry-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const registry = await clientFrom(flags).get<RegistryJson>(path(id))
    deps.print(flags.json ? JSON.stringify(registry, null, 2) : registryTable([registry]))
  })

  withQuietOption(
    withClientOptions(
      registries
        .command('create')
        .description(
          'store credentials for a private registry (the password is never shown again)',
        ),
    ),
  )
    .requiredOption('--name <name>', 'a name for these credentials')
    .requiredOption('--username <username>', 'registry user name')
    .option('--password-stdin', 'read the password from standard input (recommended)')
    .option('--password <password>', 'the password (visible in process lists and shell history)')
    .action(
      async (
        flags: ClientFlags & {
          name: string
          username: string
          passwordStdin?: boolean
          password?: string
          quiet?: boolean
        },
      ) => {
        if (flags.passwordStdin && flags.password !== undefined) {
          throw new UsageError('give either --password-stdin or --password, not both')
        }
        let password: string
        if (flags.passwordStdin) {
          password = passwordFromStdin(await readStdin())
        } else if (flags.password !== undefined) {
          warn(
            'warning: --password is visible to other users in process lists and lands in shell history; prefer --password-stdin',
          )
          password = flags.password
        } else {
          throw new UsageError(
            'give the password with --password-stdin (recommended) or --password',
          )
        }
        if (password === '') throw new UsageError('the password is empty')
        const created = await clientFrom(flags).request<RegistryJson>('POST', '/v2/registries', {
          name: flags.name,
          username: flags.username,
          password,
        })
        deps.print(
          createdOutput(flags, created, `Created registry ${created.id} (${created.name}).`),
        )
      },
    )

  withClientOptions(
    registries
      .command('delete')
      .description('delete a registry credential (refused while anything uses it)')
      .argument('<registry-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    await clientFrom(flags).request('DELETE', path(id))
    deps.print(flags.json ? JSON.stringify({ id, deleted: true }) : `Deleted registry ${id}.`)
  })
}
