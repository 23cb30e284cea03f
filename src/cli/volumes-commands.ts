import { InvalidArgumentError, type Command } from 'commander'
import {
  clientFrom,
  createdOutput,
  withClientOptions,
  withQuietOption,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'

interface VolumeJson {
  id: string
  name: string
  size: number
  dataCenter: string
  dataCenterId: string
  type: string
  usedBytes: number
  createdAt: string
}

export interface VolumesCommandDeps {
  print(text: string): void
}

const GB = 1024 ** 3

/** Bytes for people: `0 B`, `512 B`, `1.5 KiB`, ..., `2.0 GiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`
}

function usedOf(volume: VolumeJson): string {
  const percent = Math.round((volume.usedBytes / (volume.size * GB)) * 100)
  return `${formatBytes(volume.usedBytes)} (${percent}%)`
}

function volumeTable(volumes: VolumeJson[]): string {
  return formatTable(
    ['ID', 'NAME', 'SIZE GB', 'USED', 'TYPE', 'DATA CENTER', 'CREATED'],
    volumes.map((v) => [v.id, v.name, v.size, usedOf(v), v.type, v.dataCenter, v.createdAt]),
  )
}

function volumeDetail(volume: VolumeJson): string {
  return [
    `${volume.id}  ${volume.name}`,
    `  size        ${volume.size} GB`,
    `  used        ${usedOf(volume)}`,
    `  type        ${volume.type}`,
    `  data center ${volume.dataCenter}`,
    `  created     ${volume.createdAt}`,
  ].join('\n')
}

/** Whole GB; the server checks the bounds and says which. */
function wholeNumber(value: string): number {
  const n = Number(value)
  if (value.trim() === '' || !Number.isInteger(n))
    throw new InvalidArgumentError('not a whole number of GB')
  return n
}

/** `podyard volumes list|get|create|resize|delete`, against a running server. */
export function addVolumesCommands(program: Command, deps: VolumesCommandDeps): void {
  const volumes = program
    .command('volumes')
    .description('network volumes: storage your pods share, on a running server')
  const withClient = withClientOptions
  const clientOf = clientFrom
  const pathOf = (id: string) => `/v2/network-volumes/${encodeURIComponent(id)}`
  const show = (flags: ClientFlags, volume: VolumeJson) =>
    deps.print(flags.json ? JSON.stringify(volume, null, 2) : volumeDetail(volume))

  withClient(volumes.command('list').description('your network volumes')).action(
    async (flags: ClientFlags) => {
      const { networkVolumes } = await clientOf(flags).get<{ networkVolumes: VolumeJson[] }>(
        '/v2/network-volumes',
      )
      deps.print(flags.json ? JSON.stringify(networkVolumes, null, 2) : volumeTable(networkVolumes))
    },
  )

  withClient(
    volumes.command('get').description('one network volume').argument('<volume-id>'),
  ).action(async (id: string, flags: ClientFlags) =>
    show(flags, await clientOf(flags).get<VolumeJson>(pathOf(id))),
  )

  withQuietOption(withClient(volumes.command('create').description('create a network volume')))
    .requiredOption('--name <name>', 'volume name')
    .requiredOption('--size <gb>', 'size in GB (10 to 4096)', wholeNumber)
    .requiredOption(
      '--data-center <id>',
      'data center that offers the type (see: podyard catalog datacenters)',
    )
    .option('--type <type>', 'STANDARD or HIGH_PERFORMANCE', 'STANDARD')
    .action(
      async (
        flags: ClientFlags & {
          name: string
          size: number
          dataCenter: string
          type: string
          quiet?: boolean
        },
      ) => {
        const volume = await clientOf(flags).request<VolumeJson>('POST', '/v2/network-volumes', {
          name: flags.name,
          size: flags.size,
          dataCenterId: flags.dataCenter,
          type: flags.type,
        })
        deps.print(createdOutput(flags, volume, volumeDetail(volume)))
      },
    )

  withClient(
    volumes
      .command('resize')
      .description('grow a network volume (it can never shrink)')
      .argument('<volume-id>'),
  )
    .requiredOption('--size <gb>', 'new size in GB', wholeNumber)
    .action(async (id: string, flags: ClientFlags & { size: number }) =>
      show(
        flags,
        await clientOf(flags).request<VolumeJson>('PATCH', pathOf(id), { size: flags.size }),
      ),
    )

  withClient(
    volumes
      .command('rename')
      .description('rename a network volume')
      .argument('<volume-id>')
      .argument('<name>'),
  ).action(async (id: string, name: string, flags: ClientFlags) =>
    show(flags, await clientOf(flags).request<VolumeJson>('PATCH', pathOf(id), { name })),
  )

  withClient(
    volumes
      .command('delete')
      .description('delete a network volume and its files (refused while a pod uses it)')
      .argument('<volume-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    await clientOf(flags).request('DELETE', pathOf(id))
    deps.print(flags.json ? JSON.stringify({ id, deleted: true }) : `Deleted ${id}.`)
  })
}
