import type { Command } from 'commander'
import { ApiError, readEvents, type ApiClient } from '../client/api-client.js'
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

interface PodJson {
  id: string
  name: string
  status: string
  image: string
  gpu?: { id: string; count: number }
  cpu?: { id: string; vcpuCount: number; memory: number }
  dataCenterId: string | null
  cost: number
  createdAt: string
  statusReason: string | null
  runtime: {
    ports?: Array<{ private: number; public: number | null; type: string; ip: string | null }>
  } | null
}

export interface PodsCommandDeps {
  print(text: string): void
  /** Progress for people (stderr), so stdout stays parseable. */
  progress(text: string): void
  sleep(ms: number): Promise<void>
}

function computeOf(pod: PodJson): string {
  if (pod.gpu) return `${pod.gpu.count}x ${pod.gpu.id}`
  if (pod.cpu) return `${pod.cpu.id} ${pod.cpu.vcpuCount} vCPU ${pod.cpu.memory} GB`
  return '-'
}

function podTable(pods: PodJson[]): string {
  return formatTable(
    ['ID', 'NAME', 'STATUS', 'COMPUTE', 'DATA CENTER', '$/H', 'CREATED'],
    pods.map((p) => [p.id, p.name, p.status, computeOf(p), p.dataCenterId, p.cost, p.createdAt]),
  )
}

function podDetail(pod: PodJson): string {
  const ports =
    pod.runtime?.ports?.map((p) => `${p.private}/${p.type} -> ${p.ip}:${p.public}`) ?? []
  return [
    `${pod.id}  ${pod.name}`,
    `  status      ${pod.status}${pod.statusReason ? ` (${pod.statusReason})` : ''}`,
    `  image       ${pod.image}`,
    `  compute     ${computeOf(pod)}`,
    `  data center ${pod.dataCenterId ?? '-'}`,
    `  cost        $${pod.cost}/h`,
    ...(ports.length > 0 ? [`  ports       ${ports.join(', ')}`] : []),
  ].join('\n')
}

/** Polls the pod until it is RUNNING (or can no longer get there), reporting each status. */
async function waitForRunning(
  client: ApiClient,
  id: string,
  deps: PodsCommandDeps,
  timeoutMs: number,
): Promise<PodJson> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  for (;;) {
    const pod = await client.get<PodJson>(`/v2/pods/${encodeURIComponent(id)}`)
    if (pod.status !== last) {
      deps.progress(`${pod.id} ${pod.status}${pod.statusReason ? ` (${pod.statusReason})` : ''}`)
      last = pod.status
    }
    if (pod.status === 'RUNNING') return pod
    if (['EXITED', 'ERROR', 'TERMINATED'].includes(pod.status)) {
      throw new Error(
        `pod ${pod.id} is ${pod.status}${pod.statusReason ? `: ${pod.statusReason}` : ''}`,
      )
    }
    if (Date.now() > deadline)
      throw new Error(`pod ${pod.id} is still ${pod.status} after ${timeoutMs / 1000} s`)
    await deps.sleep(500)
  }
}

/** The server's 409 says when the other cloud has room; the CLI says how to ask for it. */
function withCloudHint(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.status !== 409) return error
  const detail = error.problem?.detail
  if (!detail?.endsWith('the COMMUNITY cloud has room for it')) return error
  return new ApiError(409, { ...error.problem, detail: `${detail}: pass --cloud COMMUNITY` })
}

export function addPodsCommands(program: Command, deps: PodsCommandDeps): void {
  const pods = program.command('pods').description('rent and run pods, on a running server')
  const withClient = withClientOptions
  const clientOf = clientFrom
  const show = (flags: ClientFlags, pod: PodJson) =>
    deps.print(flags.json ? JSON.stringify(pod, null, 2) : podDetail(pod))

  withClient(pods.command('list').description('your pods'))
    .option(
      '--status <statuses>',
      'only these statuses, comma-separated (TERMINATED only when named)',
    )
    .option('--name <name>', 'only pods with this name')
    .action(async (flags: ClientFlags & { status?: string; name?: string }) => {
      const query = new URLSearchParams({
        ...(flags.status ? { status: flags.status } : {}),
        ...(flags.name ? { name: flags.name } : {}),
      }).toString()
      const { pods: list } = await clientOf(flags).get<{ pods: PodJson[] }>(
        `/v2/pods${query ? `?${query}` : ''}`,
      )
      deps.print(flags.json ? JSON.stringify(list, null, 2) : podTable(list))
    })

  withClient(pods.command('get').description('one pod').argument('<pod-id>')).action(
    async (id: string, flags: ClientFlags) =>
      show(flags, await clientOf(flags).get<PodJson>(`/v2/pods/${encodeURIComponent(id)}`)),
  )

  withQuietOption(
    withContainerOptions(withClient(pods.command('create').description('create a pod'))),
  )
    .requiredOption('--name <name>', 'pod name')
    .option('--image <image>', 'container image (or --template)')
    .option(
      '--template <id>',
      'a pod template: its fields are the defaults (see: podyard templates)',
    )
    .option('--gpu <type>', 'GPU type: an id or a name such as "RTX 4090" (podyard catalog gpus)')
    .option('--gpu-count <n>', 'GPUs', (v) => Number(v))
    .option(
      '--cuda <version>',
      'only hosts with this CUDA version, e.g. 12.4 (repeatable, or comma-separated)',
      collect,
      [] as string[],
    )
    .option('--cpu <flavor>', 'CPU flavor id (see: podyard catalog cpus)')
    .option('--vcpus <n>', 'vCPUs of a CPU pod (a power of two)', (v) => Number(v))
    .option('--volume-size <gb>', 'persistent volume, GB (GPU pods)', (v) => Number(v))
    .option('--volume-path <path>', 'where the persistent volume is mounted', '/workspace')
    .option('--network-volume <id>', 'a network volume of the data center (podyard volumes)')
    .option('--network-volume-path <path>', 'where the network volume is mounted', '/workspace')
    .option('--cloud <cloud>', 'SECURE or COMMUNITY')
    .option(
      '--data-center <id>',
      'allowed data center, in order of preference (repeatable)',
      collect,
      [] as string[],
    )
    .option('--global-networking', 'give the pod an address on your private network')
    .option(
      '--host-label <constraint>',
      'a label its host must have: ib=true, driver>=550 (repeatable; a podyard extension)',
      collect,
      [] as string[],
    )
    .option('--wait', 'wait until the pod is RUNNING, showing its progress')
    .option('--timeout <seconds>', 'how long --wait waits', (v) => Number(v), 300)
    .action(
      async (
        flags: ClientFlags & {
          name: string
          image?: string
          template?: string
          gpu?: string
          gpuCount?: number
          cuda: string[]
          networkVolume?: string
          networkVolumePath: string
          cpu?: string
          vcpus?: number
          args?: string
          disk?: number
          port: string[]
          env: string[]
          volumeSize?: number
          volumePath: string
          cloud?: string
          dataCenter: string[]
          hostLabel: string[]
          globalNetworking?: boolean
          wait?: boolean
          timeout: number
          quiet?: boolean
        },
      ) => {
        const client = clientOf(flags)
        const [gpuId] = await gpuTypeIds(client, flags.gpu ? [flags.gpu] : [])
        const cudaVersions = flags.cuda.flatMap((v) => v.split(',')).filter((v) => v !== '')
        if (cudaVersions.length > 0 && !gpuId)
          throw new UsageError('--cuda is for GPU pods (--gpu)')
        if (flags.networkVolume && flags.volumeSize !== undefined) {
          throw new UsageError('give --network-volume or --volume-size, not both')
        }
        const body = {
          name: flags.name,
          ...(flags.image ? { image: flags.image } : {}),
          ...(flags.template ? { templateId: flags.template } : {}),
          ...containerBody(flags),
          ...(gpuId
            ? {
                gpu: {
                  id: gpuId,
                  count: flags.gpuCount ?? 1,
                  ...(cudaVersions.length > 0 ? { allowedCudaVersions: cudaVersions } : {}),
                },
              }
            : {}),
          ...(flags.cpu ? { cpu: { id: flags.cpu, vcpuCount: flags.vcpus ?? 2 } } : {}),
          ...(flags.volumeSize !== undefined
            ? { mounts: { persistent: { size: flags.volumeSize, path: flags.volumePath } } }
            : {}),
          ...(flags.networkVolume
            ? {
                mounts: {
                  network: [{ volumeId: flags.networkVolume, path: flags.networkVolumePath }],
                },
              }
            : {}),
          ...(flags.cloud ? { cloud: flags.cloud } : {}),
          ...(flags.dataCenter.length > 0 ? { dataCenterIds: flags.dataCenter } : {}),
          ...(flags.globalNetworking ? { globalNetworking: true } : {}),
          ...(flags.hostLabel.length > 0 ? { hostLabels: flags.hostLabel } : {}),
        }
        let pod = await client
          .request<PodJson>('POST', '/v2/pods', body)
          .catch((error: unknown) => {
            throw withCloudHint(error)
          })
        if (flags.wait) pod = await waitForRunning(client, pod.id, deps, flags.timeout * 1000)
        deps.print(createdOutput(flags, pod, podDetail(pod)))
      },
    )

  withContainerOptions(
    withClient(
      pods
        .command('update')
        .description('change a pod; a change other than --name and --lock restarts a running pod')
        .argument('<pod-id>'),
    ),
  )
    .option('--name <name>', 'new name')
    .option('--image <image>', 'new container image')
    .option('--lock', 'refuse stop and reset until unlocked')
    .option('--unlock', 'allow stop and reset again')
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
          lock?: boolean
          unlock?: boolean
        },
      ) => {
        if (flags.lock && flags.unlock) throw new UsageError('give --lock or --unlock, not both')
        const body = {
          ...(flags.name !== undefined ? { name: flags.name } : {}),
          ...(flags.image !== undefined ? { image: flags.image } : {}),
          ...containerBody(flags),
          ...(flags.lock ? { locked: true } : flags.unlock ? { locked: false } : {}),
        }
        if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give a flag')
        show(
          flags,
          await clientOf(flags).request<PodJson>(
            'PATCH',
            `/v2/pods/${encodeURIComponent(id)}`,
            body,
          ),
        )
      },
    )

  withClient(
    pods
      .command('stop')
      .description('stop a pod (its GPUs go back to the host)')
      .argument('<pod-id>'),
  ).action(async (id: string, flags: ClientFlags) =>
    show(
      flags,
      await clientOf(flags).request<PodJson>('POST', `/v2/pods/${encodeURIComponent(id)}/action`, {
        action: 'stop',
      }),
    ),
  )

  for (const action of ['start', 'restart', 'reset'] as const) {
    withClient(pods.command(action).description(`${action} a pod`).argument('<pod-id>'))
      .option('--wait', 'wait until the pod is RUNNING, showing its progress')
      .option('--timeout <seconds>', 'how long --wait waits', (v) => Number(v), 300)
      .action(async (id: string, flags: ClientFlags & { wait?: boolean; timeout: number }) => {
        const client = clientOf(flags)
        let pod = await client.request<PodJson>(
          'POST',
          `/v2/pods/${encodeURIComponent(id)}/action`,
          { action },
        )
        if (flags.wait) pod = await waitForRunning(client, pod.id, deps, flags.timeout * 1000)
        show(flags, pod)
      })
  }

  withClient(
    pods
      .command('terminate')
      .description('terminate a pod (frees its resources and disks)')
      .argument('<pod-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    await clientOf(flags).request('DELETE', `/v2/pods/${encodeURIComponent(id)}`)
    deps.print(flags.json ? JSON.stringify({ id, status: 'TERMINATED' }) : `Terminated ${id}.`)
  })

  withClient(pods.command('logs').description('a pod’s output').argument('<pod-id>'))
    .option('-f, --follow', 'keep printing new lines')
    .option('--tail <n>', 'lines of history', (v) => Number(v), 100)
    .option(
      '--source <source>',
      'container, system (lifecycle events) or both (interleaved by time)',
      'container',
    )
    .action(
      async (
        id: string,
        flags: ClientFlags & { follow?: boolean; tail: number; source: string },
      ) => {
        const query = new URLSearchParams({
          tail: String(flags.tail),
          // The API's default is both sources.
          ...(flags.source === 'both' ? {} : { source: flags.source }),
          follow: flags.follow ? 'true' : 'false',
        })
        const response = await clientOf(flags).open(
          `/v2/pods/${encodeURIComponent(id)}/logs?${query}`,
        )
        for await (const event of readEvents(response)) {
          const { ts, line, source } = JSON.parse(event.data) as {
            ts: string
            line: string
            source: string
          }
          const text =
            flags.source === 'both'
              ? `${ts}  ${source.padEnd(9)}  ${line}`
              : flags.source === 'system'
                ? `${ts}  ${line}`
                : line
          deps.print(flags.json ? event.data : text)
        }
      },
    )
}
