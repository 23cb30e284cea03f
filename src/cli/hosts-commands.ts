import type { Command } from 'commander'
import { clientFrom, withClientOptions, type ClientFlags } from './client-options.js'
import { formatTable } from './format-table.js'
import { addHostImageCommands } from './host-image-commands.js'
import { UsageError } from './usage-error.js'
import { unacceptedConsequence } from '../shared/contained-limits.js'

interface HostJson {
  id: string
  dataCenterId: string
  gpu: { typeId: string; count: number } | null
  vcpus: number
  memoryGb: number
  runtime: string
  publicIp: string
  labels?: Record<string, string>
  state: string
  stateReason: string | null
  stateSince: string
  schedule: string
  reported: {
    name: string
    engineId?: string
    cpus: number
    memoryGb: number
    serverVersion: string
    runtimes: string[]
    gpus?: { index: number; uuid: string; name: string; memoryMib: number | null }[]
    cudaVersion?: string | null
    gpuProbeError?: string
  } | null
  offered?: { gpu: { typeId: string; count: number } | null; vcpus: number; memoryGb: number }
  unenforcedLimits?: { limit: string; reason: string; accepted: boolean }[]
  warnings: string[]
  podCount: number
  globalNetworking?: { offered: boolean; subnet: string | null; members: number; accounts: number }
  gpus?: GpuJson[]
}

interface GpuJson {
  index: number
  health: string
  reason: string | null
  warnings: string[]
  responding: boolean
  utilPercent: number | null
  memoryUsedPercent: number | null
  temperatureC: number | null
}

const figure = (value: number | null, unit: string) => (value === null ? '-' : `${value}${unit}`)

/** One GPU as a line: index, health and why, its last reading, its warnings. */
function gpuLine(gpu: GpuJson): string {
  const health =
    gpu.health === 'WITHDRAWN'
      ? `WITHDRAWN: ${gpu.reason ?? ''}`
      : gpu.responding
        ? 'healthy'
        : 'not responding'
  const reading = `util ${figure(gpu.utilPercent, '%')}, memory ${figure(gpu.memoryUsedPercent, '%')}, ${figure(gpu.temperatureC, ' °C')}`
  const warned = gpu.warnings.length > 0 ? `; warning: ${gpu.warnings.join('; ')}` : ''
  return `gpu ${String(gpu.index).padEnd(7)} ${health} (${reading})${warned}`
}

interface PodOnHostJson {
  id: string
  name: string
  accountId: string
  status: string
}

export interface HostsCommandDeps {
  print(text: string): void
}

/** `pool=team-a,ib=true`; empty when there are none. */
const labelsText = (labels: Record<string, string> | undefined) =>
  Object.entries(labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',')

const hostTable = (list: HostJson[]) =>
  formatTable(
    ['ID', 'DATA CENTER', 'STATE', 'SCHEDULE', 'GPUS', 'PODS', 'LABELS', 'RUNTIME'],
    list.map((h) => [
      h.id,
      h.dataCenterId,
      h.state,
      h.schedule,
      h.gpu ? `${h.gpu.count} × ${h.gpu.typeId}` : '-',
      String(h.podCount),
      labelsText(h.labels) || '-',
      h.runtime,
    ]),
  )

const podTable = (pods: PodOnHostJson[]) =>
  formatTable(
    ['POD', 'NAME', 'ACCOUNT', 'STATUS'],
    pods.map((p) => [p.id, p.name, p.accountId, p.status]),
  )

/** One host, as lines a person reads. */
function describeHost(host: HostJson & { pods?: PodOnHostJson[] }): string {
  const lines = [
    `host        ${host.id} in ${host.dataCenterId}`,
    `state       ${host.state} since ${host.stateSince}${host.stateReason ? `: ${host.stateReason}` : ''}`,
    `schedule    ${host.schedule}`,
    `runtime     ${host.runtime}`,
    `public ip   ${host.publicIp}`,
    ...(labelsText(host.labels) ? [`labels      ${labelsText(host.labels)}`] : []),
    `declared    ${host.gpu ? `${host.gpu.count} × ${host.gpu.typeId}, ` : ''}${host.vcpus} vCPUs, ${host.memoryGb} GB`,
  ]
  if (host.reported) {
    const r = host.reported
    lines.push(
      `reported    ${r.name}: ${r.cpus} CPUs, ${r.memoryGb} GB, Docker ${r.serverVersion}, runtimes ${r.runtimes.join(', ')}`,
      ...(r.engineId ? [`engine id   ${r.engineId}`] : []),
    )
    for (const gpu of r.gpus ?? [])
      lines.push(
        `gpu ${String(gpu.index).padEnd(8)}${gpu.name}, ${gpu.memoryMib ?? '?'} MiB, ${gpu.uuid}${r.cudaVersion ? `, CUDA ${r.cudaVersion}` : ''}`,
      )
  }
  if (host.offered) {
    const o = host.offered
    lines.push(
      `offered     ${o.gpu ? `${o.gpu.count} × ${o.gpu.typeId}` : 'no GPUs'}, ${o.vcpus} vCPUs, ${o.memoryGb} GB`,
    )
  }
  const global = host.globalNetworking
  if (global && (global.offered || global.members > 0)) {
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
    lines.push(
      `global net  ${global.offered ? `${global.subnet} per account` : 'not offered here'}: ` +
        `${plural(global.members, 'pod')} of ${plural(global.accounts, 'account')}`,
    )
  }
  for (const u of host.unenforcedLimits ?? []) {
    const consequence = u.accepted
      ? 'accepted for every account (containment.acceptUnenforced)'
      : `${unacceptedConsequence(u.limit)} here (containment.acceptUnenforced)`
    lines.push(`unenforced  ${u.limit}: ${u.reason}; ${consequence}`)
  }
  for (const warning of host.warnings) lines.push(`warning     ${warning}`)
  for (const gpu of host.gpus ?? []) lines.push(gpuLine(gpu))
  if (host.gpus?.some((g) => g.health === 'WITHDRAWN'))
    lines.push(`            put a fixed GPU back: podyard hosts gpu-reset ${host.id} <index>`)
  if (host.pods) lines.push('', host.pods.length > 0 ? podTable(host.pods) : 'no pods')
  return lines.join('\n')
}

/** `podyard hosts ...`: the fleet's hosts for the admin (docs/fleet.md, "Host state"). */
export function addHostsCommands(program: Command, deps: HostsCommandDeps): void {
  const hosts = program
    .command('hosts')
    .description("the fleet's hosts: state, cordon, drain (admin key), on a running server")
  const path = (id: string, action = '') =>
    `/v2/admin/hosts/${encodeURIComponent(id)}${action ? `/${action}` : ''}`

  withClientOptions(hosts.command('list').description('every host, its state and schedule')).action(
    async (flags: ClientFlags) => {
      const { hosts: list } = await clientFrom(flags).get<{ hosts: HostJson[] }>('/v2/admin/hosts')
      deps.print(flags.json ? JSON.stringify(list, null, 2) : hostTable(list))
    },
  )

  withClientOptions(
    hosts
      .command('get')
      .description('one host, what it reports and its pods')
      .argument('<host-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    const host = await clientFrom(flags).get<HostJson & { pods: PodOnHostJson[] }>(path(id))
    deps.print(flags.json ? JSON.stringify(host, null, 2) : describeHost(host))
  })

  for (const [action, description] of [
    ['cordon', 'place no new pods or workers on the host'],
    ['uncordon', 'place pods and workers on the host again (ends a drain too)'],
  ] as const) {
    withClientOptions(hosts.command(action).description(description).argument('<host-id>')).action(
      async (id: string, flags: ClientFlags) => {
        const host = await clientFrom(flags).request<HostJson>('POST', path(id, action))
        deps.print(
          flags.json ? JSON.stringify(host, null, 2) : `host ${host.id} is ${host.schedule}`,
        )
      },
    )
  }

  withClientOptions(
    hosts
      .command('drain')
      .description('no new placements, serverless workers moved off; lists the pods left')
      .argument('<host-id>')
      .option(
        '--migrate',
        'also move each running pod without a host-local volume to another host (same id)',
      ),
  ).action(async (id: string, flags: ClientFlags & { migrate?: boolean }) => {
    const result = await clientFrom(flags).request<{
      host: HostJson
      podsLeft: Array<PodOnHostJson & { notMovedBecause?: string }>
      podsMoved: Array<PodOnHostJson & { movedTo: string }>
    }>('POST', `${path(id, 'drain')}${flags.migrate ? '?migrate=true' : ''}`)
    if (flags.json) return deps.print(JSON.stringify(result, null, 2))
    const lines = [`host ${result.host.id} is ${result.host.schedule}`]
    for (const pod of result.podsMoved)
      lines.push(`moved pod ${pod.id} (${pod.name}) to host ${pod.movedTo}`)
    lines.push(
      result.podsLeft.length > 0
        ? `pods left on it (stop or terminate them):\n${podTable(result.podsLeft)}`
        : 'no pods left on it',
    )
    for (const pod of result.podsLeft)
      if (pod.notMovedBecause) lines.push(`not moved: pod ${pod.id}: ${pod.notMovedBecause}`)
    deps.print(lines.join('\n'))
  })

  withClientOptions(
    hosts
      .command('gpu-reset')
      .description('put a GPU withdrawn for its health back into placement, once it is fixed')
      .argument('<host-id>')
      .argument('<index>', "the GPU's index on the host (nvidia-smi's)"),
  ).action(async (id: string, index: string, flags: ClientFlags) => {
    if (!/^\d+$/.test(index)) throw new UsageError(`GPU index must be a number, got "${index}"`)
    const host = await clientFrom(flags).request<HostJson>(
      'POST',
      `${path(id)}/gpus/${index}/reset`,
    )
    if (flags.json) return deps.print(JSON.stringify(host, null, 2))
    const gpu = host.gpus?.find((g) => g.index === Number(index))
    deps.print(
      `GPU ${index} of host ${host.id} takes pods again; host is ${host.state}${gpu ? `\n${gpuLine(gpu)}` : ''}`,
    )
  })
  addHostImageCommands(hosts, deps)
}
