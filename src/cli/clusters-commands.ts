import type { Command } from 'commander'
import {
  clientFrom,
  collect,
  createdOutput,
  parseEnvPairs,
  withClientOptions,
  withQuietOption,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'
import { gpuTypeIds } from './gpu-names.js'

interface ClusterJson {
  id: string
  name: string
  type: string
  compute: { gpuTypeId: string; gpuCountPerPod: number; podCount: number }
  dataCenterId: string
  pods: { total: number; byStatus: Record<string, number> }
  primary?: { podId: string; status: string; sshEndpoint?: string }
}

interface PodJson {
  id: string
  name: string
  status: string
  cluster?: { rank: number; role?: string; ip?: string }
  dataCenterId: string | null
}

function clusterTable(clusters: ClusterJson[]): string {
  return formatTable(
    ['ID', 'NAME', 'TYPE', 'COMPUTE', 'DATA CENTER', 'PODS', 'PRIMARY'],
    clusters.map((c) => [
      c.id,
      c.name,
      c.type,
      `${c.compute.podCount} x ${c.compute.gpuCountPerPod}x ${c.compute.gpuTypeId}`,
      c.dataCenterId,
      Object.entries(c.pods.byStatus)
        .map(([status, n]) => `${n} ${status}`)
        .join(', '),
      c.primary
        ? `${c.primary.podId}${c.primary.sshEndpoint ? ` ${c.primary.sshEndpoint}` : ''}`
        : null,
    ]),
  )
}

interface CreateFlags extends ClientFlags {
  name: string
  type: string
  gpu: string
  gpuCount: number
  pods: number
  image?: string
  template?: string
  args?: string
  disk?: number
  port: string[]
  env: string[]
  dataCenter: string[]
  startSsh?: boolean
  quiet?: boolean
}

const number = (value: string) => Number(value)

/** `podyard clusters ...`: instant clusters on a running server (docs/clusters.md). */
export function addClustersCommands(program: Command, deps: { print(text: string): void }): void {
  const clusters = program
    .command('clusters')
    .description('instant clusters: GPU pods placed together in one data center')
  const json = (value: unknown) => JSON.stringify(value, null, 2)
  const path = (id: string) => `/v2/clusters/${encodeURIComponent(id)}`

  withClientOptions(clusters.command('list').description('your clusters')).action(
    async (flags: ClientFlags) => {
      const { clusters: list } = await clientFrom(flags).get<{ clusters: ClusterJson[] }>(
        '/v2/clusters',
      )
      deps.print(flags.json ? json(list) : clusterTable(list))
    },
  )

  withClientOptions(
    clusters.command('get').description('one cluster').argument('<cluster-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const cluster = await clientFrom(flags).get<ClusterJson>(path(id))
    deps.print(flags.json ? json(cluster) : clusterTable([cluster]))
  })

  withClientOptions(
    clusters.command('pods').description("a cluster's pods, by rank").argument('<cluster-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const { pods } = await clientFrom(flags).get<{ pods: PodJson[] }>(`${path(id)}/pods`)
    deps.print(
      flags.json
        ? json(pods)
        : formatTable(
            ['RANK', 'ROLE', 'POD', 'NAME', 'STATUS', 'ADDRESS'],
            pods.map((p) => [
              p.cluster?.rank ?? null,
              p.cluster?.role ?? null,
              p.id,
              p.name,
              p.status,
              p.cluster?.ip ?? null,
            ]),
          ),
    )
  })

  withQuietOption(withClientOptions(clusters.command('create').description('create a cluster')))
    .requiredOption('--name <name>', 'cluster name')
    .option('--type <type>', 'TRAINING, APPLICATION, SLURM or RAY', 'TRAINING')
    .requiredOption('--gpu <type>', 'GPU type of every pod: an id or a name, e.g. "H100 SXM"')
    .option('--gpu-count <n>', 'GPUs per pod', number, 1)
    .requiredOption('--pods <n>', 'pods (nodes), 2 to 250', number)
    .option('--image <image>', 'container image (or --template)')
    .option('--template <id>', 'pod template to take the container from')
    .option('--args <command>', 'command, run through /bin/sh -c')
    .option('--disk <gb>', 'container disk, GB', number)
    .option('--port <port/protocol>', 'declared port (repeatable)', collect, [] as string[])
    .option('--env <NAME=value>', 'environment variable (repeatable)', collect, [] as string[])
    .option('--data-center <id>', 'allowed data center (repeatable)', collect, [] as string[])
    .option('--start-ssh', "put the account's SSH keys in PUBLIC_KEY")
    .action(async (flags: CreateFlags) => {
      const client = clientFrom(flags)
      const [gpuTypeId] = await gpuTypeIds(client, [flags.gpu])
      const cluster = await client.request<ClusterJson>('POST', '/v2/clusters', {
        name: flags.name,
        type: flags.type,
        compute: { gpuTypeId, gpuCountPerPod: flags.gpuCount, podCount: flags.pods },
        ...(flags.image ? { image: flags.image } : {}),
        ...(flags.template ? { templateId: flags.template } : {}),
        ...(flags.args !== undefined ? { args: flags.args } : {}),
        ...(flags.disk !== undefined ? { disk: flags.disk } : {}),
        ...(flags.port.length > 0 ? { ports: flags.port } : {}),
        ...(flags.env.length > 0 ? { env: parseEnvPairs(flags.env) } : {}),
        ...(flags.dataCenter.length > 0 ? { dataCenterIds: flags.dataCenter } : {}),
        ...(flags.startSsh ? { startSsh: true } : {}),
      })
      deps.print(
        createdOutput(
          flags,
          cluster,
          `Created cluster ${cluster.id} (${cluster.name}): ${cluster.pods.total} pods in ${cluster.dataCenterId}, primary ${cluster.primary?.podId ?? '-'}`,
        ),
      )
    })

  withClientOptions(
    clusters
      .command('rename')
      .description('rename a cluster')
      .argument('<cluster-id>')
      .argument('<name>'),
  ).action(async (id: string, name: string, flags: ClientFlags) => {
    const cluster = await clientFrom(flags).request<ClusterJson>('PATCH', path(id), { name })
    deps.print(flags.json ? json(cluster) : `Renamed cluster ${id} to ${cluster.name}.`)
  })

  withClientOptions(
    clusters
      .command('delete')
      .description('delete a cluster and terminate its pods')
      .argument('<cluster-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    await clientFrom(flags).request('DELETE', path(id))
    deps.print(flags.json ? json({ id, deleted: true }) : `Deleted cluster ${id} and its pods.`)
  })
}
