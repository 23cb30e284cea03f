import type { Command } from 'commander'
import {
  clientFrom,
  containerBody,
  createdOutput,
  withClientOptions,
  withContainerOptions,
  withQuietOption,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'
import { UsageError } from './usage-error.js'

interface TemplateJson {
  id: string
  name: string
  image: string
  category: string
  public: boolean
  serverless: boolean
  disk: number
  ports: string[]
}

function templateTable(templates: TemplateJson[]): string {
  return formatTable(
    ['ID', 'NAME', 'IMAGE', 'CATEGORY', 'PUBLIC', 'SERVERLESS', 'PORTS'],
    templates.map((t) => [
      t.id,
      t.name,
      t.image,
      t.category,
      t.public,
      t.serverless,
      t.ports.join(',') || null,
    ]),
  )
}

export function addTemplatesCommands(program: Command, deps: { print(text: string): void }): void {
  const templates = program
    .command('templates')
    .description('container templates, on a running server')
  const json = (value: unknown) => JSON.stringify(value, null, 2)

  withClientOptions(templates.command('list').description('your templates'))
    .option('--public', 'also the public templates of other accounts')
    .option('--catalog <source>', 'the template catalog instead: official, verified or community')
    .action(async (flags: ClientFlags & { public?: boolean; catalog?: string }) => {
      const path = flags.catalog
        ? `/v2/catalog/templates?source=${encodeURIComponent(flags.catalog)}`
        : `/v2/templates${flags.public ? '?includePublic=true' : ''}`
      const { templates: list } = await clientFrom(flags).get<{ templates: TemplateJson[] }>(path)
      deps.print(flags.json ? json(list) : templateTable(list))
    })

  withClientOptions(
    templates.command('get').description('one template').argument('<template-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const template = await clientFrom(flags).get<TemplateJson>(
      `/v2/templates/${encodeURIComponent(id)}`,
    )
    deps.print(flags.json ? json(template) : templateTable([template]))
  })

  withQuietOption(
    withContainerOptions(
      withClientOptions(templates.command('create').description('create a template')),
    ),
  )
    .requiredOption('--name <name>', 'template name (unique in your account)')
    .requiredOption('--image <image>', 'container image')
    .option('--category <category>', 'NVIDIA, AMD or CPU')
    .option('--volume-size <gb>', 'persistent volume of pods made from it, GB', (v) => Number(v))
    .option('--volume-path <path>', 'where that volume is mounted', '/workspace')
    .option('--public', 'readable (not writable) by every account')
    .option('--serverless', 'meant for serverless endpoints')
    .action(
      async (
        flags: ClientFlags & {
          name: string
          image: string
          args?: string
          disk?: number
          port: string[]
          env: string[]
          category?: string
          registry?: string
          volumeSize?: number
          volumePath: string
          public?: boolean
          serverless?: boolean
          quiet?: boolean
        },
      ) => {
        const body = {
          name: flags.name,
          image: flags.image,
          ...containerBody(flags),
          ...(flags.category ? { category: flags.category } : {}),
          ...(flags.volumeSize !== undefined
            ? { mounts: { persistent: { size: flags.volumeSize, path: flags.volumePath } } }
            : {}),
          ...(flags.public ? { public: true } : {}),
          ...(flags.serverless ? { serverless: true } : {}),
        }
        const template = await clientFrom(flags).request<TemplateJson>(
          'POST',
          '/v2/templates',
          body,
        )
        deps.print(
          createdOutput(flags, template, `Created template ${template.id} (${template.name}).`),
        )
      },
    )

  withContainerOptions(
    withClientOptions(
      templates
        .command('update')
        .description('change a template (pods and endpoints made from it keep what they got)')
        .argument('<template-id>'),
    ),
  )
    .option('--name <name>', 'new name')
    .option('--image <image>', 'new container image')
    .option('--category <category>', 'NVIDIA, AMD or CPU')
    .option('--public', 'readable by every account')
    .option('--private', 'readable by your account only')
    .action(
      async (
        id: string,
        flags: ClientFlags & {
          name?: string
          image?: string
          args?: string
          disk?: number
          port: string[]
          env: string[]
          registry?: string
          category?: string
          public?: boolean
          private?: boolean
        },
      ) => {
        if (flags.public && flags.private)
          throw new UsageError('give --public or --private, not both')
        const body = {
          ...(flags.name !== undefined ? { name: flags.name } : {}),
          ...(flags.image !== undefined ? { image: flags.image } : {}),
          ...containerBody(flags),
          ...(flags.category ? { category: flags.category } : {}),
          ...(flags.public ? { public: true } : flags.private ? { public: false } : {}),
        }
        if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give a flag')
        const template = await clientFrom(flags).request<TemplateJson>(
          'PATCH',
          `/v2/templates/${encodeURIComponent(id)}`,
          body,
        )
        deps.print(flags.json ? json(template) : templateTable([template]))
      },
    )

  withClientOptions(
    templates.command('delete').description('delete a template').argument('<template-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    await clientFrom(flags).request('DELETE', `/v2/templates/${encodeURIComponent(id)}`)
    deps.print(flags.json ? json({ id, deleted: true }) : `Deleted template ${id}.`)
  })
}
