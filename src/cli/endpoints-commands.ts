import type { Command } from 'commander'
import { readEvents } from '../client/api-client.js'
import {
  clientFrom,
  collect,
  containerBody,
  createdOutput,
  withClientOptions,
  withContainerOptions,
  withQuietOption,
  type ClientFlags,
} from './client-options.js'
import { formatTable } from './format-table.js'
import { gpuTypeIds } from './gpu-names.js'
import { UsageError } from './usage-error.js'

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
    throw new UsageError(`--cpu: "${value}" is not <flavor>:<vcpuCount>, e.g. cpu3c:2`)
  }
  return { id, vcpuCount: Number(count) }
}

const number = (v: string) => Number(v)

interface CreateFlags extends ClientFlags {
  name?: string
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
  hostLabel: string[]
  networkVolume: string[]
  quiet?: boolean
}

/**
 * The create body (a GPU endpoint unless --cpu); the server checks every rule, so this only
 * shapes flags.
 */
export function createBody(flags: CreateFlags): Record<string, unknown> {
  const body = definitionBody(flags)
  return { ...body, ...(body.gpu === undefined && body.cpu === undefined ? { gpu: {} } : {}) }
}

/** An update's body: only the flags given (a PATCH leaves the rest as it is). */
export function updateBody(flags: CreateFlags): Record<string, unknown> {
  return definitionBody(flags)
}

function definitionBody(flags: CreateFlags): Record<string, unknown> {
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
    ...(flags.name !== undefined ? { name: flags.name } : {}),
    ...(flags.image !== undefined ? { image: flags.image } : {}),
    ...containerBody(flags),
    ...(flags.template !== undefined ? { templateId: flags.template } : {}),
    ...(cpu.length > 0 ? { cpu } : {}),
    ...(Object.keys(gpu).length > 0 ? { gpu } : {}),
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
    ...(flags.hostLabel.length > 0 ? { hostLabels: flags.hostLabel } : {}),
  }
}

/** The definition's flags, shared by `create` and `update`. */
function withDefinitionOptions(command: Command): Command {
  return command
    .option('--image <image>', 'container image (or --template)')
    .option('--gpu-pool <pool>', 'GPU pool, e.g. ADA_24 (repeatable)', collect, [] as string[])
    .option(
      '--exclude-gpu <type>',
      'GPU type never used: an id or a name such as "RTX 4090" (repeatable)',
      collect,
      [] as string[],
    )
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
    .option(
      '--host-label <constraint>',
      "a label its workers' hosts must have: ib=true, driver>=550 (repeatable; a podyard extension)",
      collect,
      [] as string[],
    )
}

interface WorkerListJson {
  endpointVersion: number
  summary: Record<string, number>
  workers: Array<{
    id: string
    status: string
    isStale: boolean
    version: number
    uptimeSeconds: number
    gpuTypeId: string | null
    dataCenterId: string | null
    reason: string | null
  }>
  startBackoff?: { failures: number; lastFailure: { reason: string }; nextStartAt: string }
}

/** The workers, under a line of counts (and the crash-loop backoff, when there is one). */
export function workerTable(list: WorkerListJson): string {
  const { summary } = list
  const head =
    `Version ${list.endpointVersion}: ${summary.total ?? 0} worker(s), ` +
    `${summary.running ?? 0} running, ${summary.idle ?? 0} idle, ` +
    `${summary.initializing ?? 0} initializing, ${summary.throttled ?? 0} throttled, ` +
    `${summary.unhealthy ?? 0} unhealthy.`
  const backoff = list.startBackoff
    ? [
        `Failing to start (${list.startBackoff.failures} in a row: ${list.startBackoff.lastFailure.reason}); next start at ${list.startBackoff.nextStartAt}.`,
      ]
    : []
  const table = formatTable(
    ['ID', 'STATUS', 'VERSION', 'UPTIME S', 'GPU', 'DATA CENTER', 'REASON'],
    list.workers.map((w) => [
      w.id,
      w.status,
      `${w.version}${w.isStale ? ' (stale)' : ''}`,
      w.uptimeSeconds,
      w.gpuTypeId,
      w.dataCenterId,
      w.reason,
    ]),
  )
  return [head, ...backoff, table].join('\n')
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

  withDefinitionOptions(
    withQuietOption(
      withContainerOptions(
        withClientOptions(endpoints.command('create').description('create a queue endpoint')),
      ),
    ),
  )
    .requiredOption('--name <name>', 'endpoint name')
    .option('--template <id>', 'template to take the container from (or --image)')
    .action(async (flags: CreateFlags) => {
      const client = clientFrom(flags)
      const body = createBody({
        ...flags,
        excludeGpu: await gpuTypeIds(client, flags.excludeGpu),
      })
      const endpoint = await client.request<EndpointJson>('POST', '/v2/serverless', body)
      deps.print(
        createdOutput(
          flags,
          endpoint,
          `Created endpoint ${endpoint.id} (${endpoint.name}); run jobs at ${endpoint.requestUrls.run}`,
        ),
      )
    })

  withDefinitionOptions(
    withContainerOptions(
      withClientOptions(
        endpoints
          .command('update')
          .description(
            'change an endpoint; a change to what workers run with rolls them (podyard endpoints releases)',
          )
          .argument('<endpoint-id>'),
      ),
    ),
  )
    .option('--name <name>', 'new name')
    .action(async (id: string, flags: CreateFlags) => {
      const client = clientFrom(flags)
      const body = updateBody({ ...flags, excludeGpu: await gpuTypeIds(client, flags.excludeGpu) })
      if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give a flag')
      const endpoint = await client.request<EndpointJson>(
        'PATCH',
        `/v2/serverless/${encodeURIComponent(id)}`,
        body,
      )
      deps.print(flags.json ? json(endpoint) : endpointTable([endpoint]))
    })

  withClientOptions(
    endpoints
      .command('workers')
      .description("the endpoint's workers: status, version, uptime, why one is not running")
      .argument('<endpoint-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const list = await clientFrom(flags).get<WorkerListJson>(
      `/v2/serverless/${encodeURIComponent(id)}/workers`,
    )
    deps.print(flags.json ? json(list) : workerTable(list))
  })

  withClientOptions(
    endpoints
      .command('worker-logs')
      .description("a worker's output and what the platform did with it")
      .argument('<endpoint-id>')
      .argument('<worker-id>'),
  )
    .option('-f, --follow', 'keep printing new lines')
    .option('--tail <n>', 'lines of history', (v) => Number(v), 100)
    .option(
      '--source <source>',
      'container (its output), system (platform events) or both (interleaved by time)',
      'both',
    )
    .action(
      async (
        endpointId: string,
        workerId: string,
        flags: ClientFlags & { follow?: boolean; tail: number; source: string },
      ) => {
        const query = new URLSearchParams({
          tail: String(flags.tail),
          ...(flags.source === 'both' ? {} : { source: flags.source }),
          follow: flags.follow ? 'true' : 'false',
        })
        const response = await clientFrom(flags).open(
          `/v2/serverless/${encodeURIComponent(endpointId)}/workers/${encodeURIComponent(workerId)}/logs?${query}`,
        )
        for await (const event of readEvents(response)) {
          if (flags.json) {
            deps.print(event.data)
            continue
          }
          const { ts, line, source } = JSON.parse(event.data) as {
            ts: string
            line: string
            source: string
          }
          deps.print(flags.source === 'container' ? line : `${ts}  ${source.padEnd(9)}  ${line}`)
        }
      },
    )

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
