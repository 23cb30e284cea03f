import type { Command } from 'commander'
import {
  clientFrom,
  collect,
  containerBody,
  withClientOptions,
  withContainerOptions,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'

interface EndpointJson {
  id: string
  name: string
  image: string
  templateId: string | null
  gpu?: { pools: string[]; count: number }
  cpu?: { id: string; vcpuCount: number }[]
  workers: { min: number; max: number; idleTimeout?: number }
  version: number
  requestUrls: { run: string }
}

function computeOf(e: EndpointJson): string {
  if (e.gpu) return `${e.gpu.count}x ${e.gpu.pools.join('|')}`
  return (e.cpu ?? []).map((c) => `${c.id}-${c.vcpuCount}`).join('|')
}

function endpointTable(endpoints: EndpointJson[]): string {
  return formatTable(
    ['ID', 'NAME', 'IMAGE', 'TEMPLATE', 'COMPUTE', 'WORKERS', 'VERSION'],
    endpoints.map((e) => [
      e.id,
      e.name,
      e.image,
      e.templateId,
      computeOf(e),
      `${e.workers.min}..${e.workers.max}`,
      e.version,
    ]),
  )
}

interface ReleaseListJson {
  endpointVersion: number
  rollout: { inProgress: boolean; workersOnLatest: number; workersTotal: number }
  releases: Array<{
    version: number
    createdAt: string
    workerCount: number
    diff: Array<{ field: string }>
  }>
}

/** The releases, newest first, under a line saying how far the workers have rolled. */
export function releaseTable(list: ReleaseListJson): string {
  const { rollout } = list
  const head =
    `Version ${list.endpointVersion}: ${rollout.workersOnLatest} of ${rollout.workersTotal} ` +
    `worker(s) on it${rollout.inProgress ? ', rollout in progress' : ''}.`
  const table = formatTable(
    ['VERSION', 'CREATED', 'WORKERS', 'CHANGED'],
    list.releases.map((r) => [
      r.version,
      r.createdAt,
      r.workerCount,
      r.diff.map((d) => d.field).join(', ') || null,
    ]),
  )
  return `${head}\n${table}`
}

/** `cpu3c:4` -> `{id: 'cpu3c', vcpuCount: 4}`; a value without `:` is an error naming the flag. */
export function parseCpuOption(value: string): { id: string; vcpuCount: number } {
  const [id, count, ...rest] = value.split(':')
  if (!id || count === undefined || rest.length > 0 || !/^\d+$/.test(count)) {
    throw new Error(`--cpu: "${value}" is not <flavor>:<vcpuCount>, e.g. cpu3c:2`)
  }
  return { id, vcpuCount: Number(count) }
}

const number = (v: string) => Number(v)

interface CreateFlags extends ClientFlags {
  name: string
  image?: string
  template?: string
  args?: string
  disk?: number
  port: string[]
  env: string[]
  registry?: string
  gpuPool: string[]
  excludeGpu: string[]
  gpuCount?: number
  cpu: string[]
  workersMin?: number
  workersMax?: number
  idleTimeout?: number
  queueDelay?: number
  requestCount?: number
  timeout?: number
  flashboot?: string
  dataCenter: string[]
  networkVolume: string[]
}

/** The create body; the server checks every rule, so this only shapes flags. */
export function createBody(flags: CreateFlags): Record<string, unknown> {
  const cpu = flags.cpu.map(parseCpuOption)
  const workers = {
    ...(flags.workersMin !== undefined ? { min: flags.workersMin } : {}),
    ...(flags.workersMax !== undefined ? { max: flags.workersMax } : {}),
    ...(flags.idleTimeout !== undefined ? { idleTimeout: flags.idleTimeout } : {}),
  }
  const gpu = {
    ...(flags.gpuPool.length > 0 ? { pools: flags.gpuPool } : {}),
    ...(flags.excludeGpu.length > 0 ? { excludedTypes: flags.excludeGpu } : {}),
    ...(flags.gpuCount !== undefined ? { count: flags.gpuCount } : {}),
  }
  return {
    name: flags.name,
    ...(flags.image !== undefined ? { image: flags.image } : {}),
    ...containerBody(flags),
    ...(flags.template !== undefined ? { templateId: flags.template } : {}),
    ...(cpu.length > 0 ? { cpu } : {}),
    ...(Object.keys(gpu).length > 0 || cpu.length === 0 ? { gpu } : {}),
    ...(Object.keys(workers).length > 0 ? { workers } : {}),
    ...(flags.requestCount !== undefined
      ? { scaling: { type: 'REQUEST_COUNT', requestCount: flags.requestCount } }
      : flags.queueDelay !== undefined
        ? { scaling: { type: 'QUEUE_DELAY', queueDelay: flags.queueDelay } }
        : {}),
    ...(flags.timeout !== undefined ? { timeout: flags.timeout } : {}),
    ...(flags.flashboot ? { flashboot: flags.flashboot } : {}),
    ...(flags.dataCenter.length > 0 ? { dataCenterIds: flags.dataCenter } : {}),
    ...(flags.networkVolume.length > 0 ? { networkVolumes: flags.networkVolume } : {}),
  }
}

export function addEndpointsCommands(program: Command, deps: { print(text: string): void }): void {
  const endpoints = program
    .command('endpoints')
    .description('serverless endpoint definitions, on a running server')
  const json = (value: unknown) => JSON.stringify(value, null, 2)

  withClientOptions(endpoints.command('list').description('your endpoints')).action(
    async (flags: ClientFlags) => {
      const { endpoints: list } = await clientFrom(flags).get<{ endpoints: EndpointJson[] }>(
        '/v2/serverless',
      )
      deps.print(flags.json ? json(list) : endpointTable(list))
    },
  )

  withClientOptions(
    endpoints.command('get').description('one endpoint').argument('<endpoint-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const endpoint = await clientFrom(flags).get<EndpointJson>(
      `/v2/serverless/${encodeURIComponent(id)}`,
    )
    deps.print(flags.json ? json(endpoint) : endpointTable([endpoint]))
  })

  withContainerOptions(
    withClientOptions(endpoints.command('create').description('create a queue endpoint')),
  )
    .requiredOption('--name <name>', 'endpoint name')
    .option('--image <image>', 'container image (or --template)')
    .option('--template <id>', 'template to take the container from (or --image)')
    .option('--gpu-pool <pool>', 'GPU pool, e.g. ADA_24 (repeatable)', collect, [] as string[])
    .option('--exclude-gpu <type>', 'GPU type id never used (repeatable)', collect, [] as string[])
    .option('--gpu-count <n>', 'GPUs per worker', number)
    .option(
      '--cpu <flavor:vcpus>',
      'CPU worker, e.g. cpu3c:2 (repeatable)',
      collect,
      [] as string[],
    )
    .option('--workers-min <n>', 'workers kept running', number)
    .option('--workers-max <n>', 'most workers', number)
    .option('--idle-timeout <s>', 'seconds an idle worker is kept', number)
    .option('--queue-delay <s>', 'scale on queue delay (seconds)', number)
    .option('--request-count <n>', 'scale on requests per worker', number)
    .option('--timeout <ms>', 'execution timeout of jobs, ms', number)
    .option('--flashboot <mode>', 'OFF, FLASHBOOT or PRIORITY_FLASHBOOT')
    .option('--data-center <id>', 'allowed data center (repeatable)', collect, [] as string[])
    .option('--network-volume <id>', 'network volume (repeatable)', collect, [] as string[])
    .action(async (flags: CreateFlags) => {
      const endpoint = await clientFrom(flags).request<EndpointJson>(
        'POST',
        '/v2/serverless',
        createBody(flags),
      )
      deps.print(
        flags.json
          ? json(endpoint)
          : `Created endpoint ${endpoint.id} (${endpoint.name}); run jobs at ${endpoint.requestUrls.run}`,
      )
    })

  withClientOptions(
    endpoints
      .command('releases')
      .description("the endpoint's versions, newest first, and its workers' rollout")
      .argument('<endpoint-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const list = await clientFrom(flags).get<ReleaseListJson>(
      `/v2/serverless/${encodeURIComponent(id)}/releases`,
    )
    deps.print(flags.json ? json(list) : releaseTable(list))
  })

  withClientOptions(
    endpoints.command('delete').description('delete an endpoint').argument('<endpoint-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    await clientFrom(flags).request('DELETE', `/v2/serverless/${encodeURIComponent(id)}`)
    deps.print(flags.json ? json({ id, deleted: true }) : `Deleted endpoint ${id}.`)
  })

  withClientOptions(
    endpoints
      .command('worker-key')
      .description(
        "print the endpoint's worker key (RUNPOD_AI_API_KEY of its workers); --rotate makes a new one",
      )
      .argument('<endpoint-id>'),
  )
    .option('--rotate', 'replace the key; the old one stops working at once')
    .action(async (id: string, flags: ClientFlags & { rotate?: boolean }) => {
      const path = `/v2/serverless/${encodeURIComponent(id)}/worker-key`
      const client = clientFrom(flags)
      const view = flags.rotate
        ? await client.request<{ workerKey: string }>('POST', `${path}/rotate`)
        : await client.get<{ workerKey: string }>(path)
      // The bare key, so that `export RUNPOD_AI_API_KEY=$(podyard endpoints worker-key ID)` works.
      deps.print(flags.json ? json(view) : view.workerKey)
    })
}
