import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import { clientFrom, withClientOptions, type ClientFlags } from './client-options.js'
import type { HostsCommandDeps } from './hosts-commands.js'
import { yamlModule } from './output-format.js'
import { checkSshAccess } from './ssh-access.js'
import { issueHostTls } from './tls-issue.js'
import { UsageError } from './usage-error.js'

interface HostFlags extends ClientFlags {
  ssh?: string
  dataCenter?: string
  cloud?: string
  vcpus?: string
  memoryGb?: string
  diskGb?: string
  gpu?: string
  gpuCount?: string
  cuda?: string
  cpuFlavors?: string
  driver?: string
  simulated?: boolean
  dockerUrl?: string
  sshKey?: string
  knownHosts?: string
  tlsCa?: string
  tlsCert?: string
  tlsKey?: string
  dataDisk?: string
  publicIp?: string
  tls?: string
  tlsOut?: string
  tlsNames?: string
  label?: string[]
  unlabel?: string[]
}

interface FleetChange {
  action: 'add' | 'update' | 'remove'
  hostId: string
  fields?: string[]
}

function whole(value: string, flag: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag} must be a whole number, got "${value}"`)
  return Number(value)
}

/**
 * A key or certificate file's text (PEM), sent to the server, which seals it in the database:
 * every replica reaches the engine without a copy of the file.
 */
function credentialText(file: string, flag: string): string {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(error as Error).message}`)
  }
  if (!text.trimStart().startsWith('-----BEGIN '))
    throw new UsageError(`${flag}: ${file} is not a PEM file (it does not start with -----BEGIN)`)
  return text
}

const dataDiskOf = (flags: HostFlags) => (flags.dataDisk ? { dataDisk: flags.dataDisk } : {})

/** The declaration's fields the flags give (only those: an update changes nothing else). */
function declarationOf(flags: HostFlags): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const engineNamed = [flags.dockerUrl, flags.ssh, flags.tls].some((flag) => flag !== undefined)
  if (flags.dataDisk !== undefined && (!engineNamed || flags.dockerUrl === 'none'))
    throw new UsageError(
      "--data-disk is the disk of the engine's machine: give it with --docker-url, --ssh or --tls (an update replaces the engine's settings whole)",
    )
  if (flags.dataCenter !== undefined) out.dataCenterId = flags.dataCenter
  if (flags.cloud !== undefined) out.cloud = flags.cloud.toUpperCase()
  if (flags.vcpus !== undefined) out.vcpus = whole(flags.vcpus, '--vcpus')
  if (flags.memoryGb !== undefined) out.memoryGb = whole(flags.memoryGb, '--memory-gb')
  if (flags.diskGb !== undefined) out.diskGb = whole(flags.diskGb, '--disk-gb')
  if (flags.gpu !== undefined) {
    out.gpu =
      flags.gpu === 'none'
        ? null
        : {
            typeId: flags.gpu,
            count: flags.gpuCount === undefined ? 1 : whole(flags.gpuCount, '--gpu-count'),
            ...(flags.cuda === undefined ? {} : { cudaVersion: flags.cuda }),
          }
  }
  if (flags.cpuFlavors !== undefined)
    out.cpuFlavors = flags.cpuFlavors.split(',').filter((f) => f !== '')
  if (flags.driver !== undefined) out.driver = flags.driver
  if (flags.simulated !== undefined) out.simulated = flags.simulated
  if (flags.dockerUrl !== undefined) {
    const tls = [flags.tlsCa, flags.tlsCert, flags.tlsKey]
    out.docker =
      flags.dockerUrl === 'none'
        ? null
        : {
            url: flags.dockerUrl,
            ...(flags.sshKey ? { sshKey: credentialText(flags.sshKey, '--ssh-key') } : {}),
            ...(flags.knownHosts ? { knownHosts: flags.knownHosts } : {}),
            ...(tls.some((t) => t !== undefined)
              ? {
                  tls: {
                    ca: flags.tlsCa && credentialText(flags.tlsCa, '--tls-ca'),
                    cert: flags.tlsCert && credentialText(flags.tlsCert, '--tls-cert'),
                    key: flags.tlsKey && credentialText(flags.tlsKey, '--tls-key'),
                  },
                }
              : {}),
            ...dataDiskOf(flags),
          }
  }
  if (flags.publicIp !== undefined) out.publicIp = flags.publicIp === 'none' ? null : flags.publicIp
  const labels: Record<string, string | null> = {}
  for (const pair of flags.label ?? []) {
    const at = pair.indexOf('=')
    if (at <= 0) throw new UsageError(`--label must be key=value (e.g. pool=team-a), got "${pair}"`)
    labels[pair.slice(0, at)] = pair.slice(at + 1)
  }
  // On update, labels merge: --unlabel removes one, the others stay.
  for (const key of flags.unlabel ?? []) labels[key] = null
  if (Object.keys(labels).length > 0) out.labels = labels
  return out
}

/** `--tls`: the engine's certificates issued by podyard's CA (src/cli/tls-issue.ts). */
async function issuedTls(id: string, flags: HostFlags) {
  const other = [
    ['--ssh', flags.ssh],
    ['--docker-url', flags.dockerUrl],
    ['--tls-ca', flags.tlsCa],
    ['--tls-cert', flags.tlsCert],
    ['--tls-key', flags.tlsKey],
  ].find(([, value]) => value !== undefined)
  if (other)
    throw new UsageError(
      `give --tls or ${other[0]}, not both: --tls sets the engine's URL and TLS files`,
    )
  return issueHostTls(clientFrom(flags), id, flags.tls ?? '', {
    ...(flags.tlsOut === undefined ? {} : { outDir: flags.tlsOut }),
    ...(flags.tlsNames === undefined ? {} : { names: flags.tlsNames }),
  })
}
const collect = (value: string, previous: string[] = []) => [...previous, value]

function withHostFlags(command: Command): Command {
  return withClientOptions(
    command
      .option('--data-center <id>', 'its data center, one of the fleet (e.g. EU-RO-1)')
      .option('--cloud <cloud>', 'SECURE (default) or COMMUNITY')
      .option('--vcpus <n>', 'its vCPUs')
      .option('--memory-gb <n>', 'its memory, GB')
      .option('--disk-gb <n>', 'its disk, GB (default 500)')
      .option('--gpu <type-id>', 'its GPU type (e.g. "NVIDIA GeForce RTX 4090"); none: a CPU host')
      .option('--gpu-count <n>', 'how many GPUs of that type (default 1)')
      .option('--cuda <version>', "the CUDA version its driver supports (nvidia-smi's banner)")
      .option(
        '--cpu-flavors <ids>',
        'CPU flavors its CPU pods may be, comma-separated (cpu3c,cpu3g)',
      )
      .option('--driver <driver>', 'process or docker (docker when --docker-url is given)')
      .option('--simulated', 'declared hardware that does not exist (runs on this machine)')
      .option('--no-simulated', 'a real machine (the default with --docker-url)')
      .option(
        '--ssh <user@host>',
        'its engine over SSH: checks --ssh-key and --known-hosts, prints the authorized_keys line',
      )
      .option('--docker-url <url>', 'its engine: ssh://user@host, tcp://host:2376, unix:///path')
      .option(
        '--ssh-key <file>',
        'ssh: the private key podyard logs in with (its text is sent and sealed)',
      )
      .option('--known-hosts <file>', "ssh: a known_hosts file with the host's key")
      .option('--tls-ca <file>', "tcp: the CA that signed the engine's certificate (sent, sealed)")
      .option('--tls-cert <file>', "tcp: podyard's client certificate (sent, sealed)")
      .option('--tls-key <file>', 'tcp: its key (sent, sealed)')
      .option(
        '--data-disk <device>',
        "the disk under its engine's data root (e.g. /dev/nvme0n1): disk write limits are set on it",
      )
      .option(
        '--tls <address[:port]>',
        "its engine over TCP+TLS with certificates podyard's CA issues; prints the dockerd flags",
      )
      .option('--tls-out <dir>', "--tls: where the engine's files go (default ./<host-id>-tls)")
      .option(
        '--tls-names <names>',
        '--tls: more DNS names or addresses of the host, comma-separated',
      )
      .option('--public-ip <address>', "where its pods' ports are reached; none: unset")
      .option(
        '--label <key=value>',
        'a label (pool=team-a, ib=true, driver=550); repeat for more; update: the others stay',
        collect,
      ),
  )
}

function changeLines(changes: FleetChange[]): string[] {
  return changes.flatMap((c) => {
    if (c.action === 'add') return [`+ add     ${c.hostId}`]
    if (c.action === 'remove') return [`- remove  ${c.hostId}`]
    return [`~ update  ${c.hostId}`, ...(c.fields ?? []).map((f) => `            ${f}`)]
  })
}

/** The hosts of a fleet file for `fleet apply`: its `hosts:` (the rest is the server's setting). */
function hostsOfFile(file: string): { hosts: unknown[]; ignored: string[] } {
  const doc: unknown = yamlModule().parse(readFileSync(file, 'utf8'))
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new UsageError(`${file}: not a fleet file (a YAML or JSON object with hosts:)`)
  const { hosts, ...rest } = doc as Record<string, unknown>
  if (hosts !== undefined && !Array.isArray(hosts))
    throw new UsageError(`${file}: hosts must be a list`)
  return { hosts: (hosts as unknown[] | undefined) ?? [], ignored: Object.keys(rest) }
}

/**
 * `podyard hosts add | update | remove` and `podyard fleet diff | apply`: hosts changed at
 * runtime, on every replica (docs/fleet.md, "Adding a machine").
 */
export function addHostChangeCommands(program: Command, deps: HostsCommandDeps): void {
  const hosts = program.commands.find((c) => c.name() === 'hosts')!
  const path = (id: string) => `/v2/admin/hosts/${encodeURIComponent(id)}`

  withHostFlags(
    hosts
      .command('add')
      .description('add a host to the fleet of every replica, without a restart')
      .argument('<host-id>'),
  ).action(async (id: string, flags: HostFlags) => {
    const setup: string[] = []
    if (flags.ssh !== undefined) {
      if (flags.dockerUrl !== undefined)
        throw new UsageError('give --ssh or --docker-url, not both')
      if (!flags.sshKey || !flags.knownHosts)
        throw new UsageError(
          '--ssh needs --ssh-key (the private key podyard logs in with: sent, sealed in the ' +
            "database) and --known-hosts (a known_hosts file with the host's key, at the same " +
            'path on every replica)',
        )
      const access = checkSshAccess(flags.ssh, flags.sshKey, flags.knownHosts)
      flags.dockerUrl = access.url
      setup.push(
        `checked: the key ${flags.sshKey} (${access.publicKey.split(' ')[0]}) and ${access.host}'s host key in ${flags.knownHosts}`,
        `on ${access.host}: put ${access.user} in the docker group and add this line to ~${access.user}/.ssh/authorized_keys`,
        `(the key may then only reach the Docker engine):`,
        `  ${access.authorizedKeysLine}`,
      )
    }
    const body: Record<string, unknown> = { id, ...declarationOf(flags) }
    if (flags.tls !== undefined) {
      const issued = await issuedTls(id, flags)
      body.docker = { url: issued.dockerUrl, tls: issued.tls, ...dataDiskOf(flags) }
      setup.push(...issued.setup)
    }
    const host = await clientFrom(flags).request<{ id: string; state: string; runtime: string }>(
      'POST',
      '/v2/admin/hosts',
      body,
    )
    if (flags.json) return deps.print(JSON.stringify(host, null, 2))
    deps.print(
      [
        ...setup,
        `host ${host.id} added (${host.runtime}); see it come UP: podyard hosts get ${host.id}`,
      ].join('\n'),
    )
  })

  withHostFlags(
    hosts
      .command('update')
      .description('change a host added at runtime: the fields whose flags are given')
      .argument('<host-id>')
      .option('--unlabel <key>', 'remove a label (repeat for more)', collect),
  ).action(async (id: string, flags: HostFlags) => {
    const patch = declarationOf(flags)
    const setup: string[] = []
    if (flags.tls !== undefined) {
      const issued = await issuedTls(id, flags)
      patch.docker = { url: issued.dockerUrl, tls: issued.tls, ...dataDiskOf(flags) }
      setup.push(...issued.setup)
    }
    if (Object.keys(patch).length === 0)
      throw new UsageError('nothing to change: give a flag to set')
    const host = await clientFrom(flags).request<{ id: string }>('PATCH', path(id), patch)
    if (flags.json) return deps.print(JSON.stringify(host, null, 2))
    deps.print([...setup, `host ${host.id} updated`].join('\n'))
  })

  withClientOptions(
    hosts
      .command('remove')
      .description('remove a host added at runtime (refused while pods or workers are on it)')
      .argument('<host-id>'),
  ).action(async (id: string, flags: ClientFlags) => {
    await clientFrom(flags).request('DELETE', path(id))
    deps.print(`host ${id} removed`)
  })

  const fleet = program
    .command('fleet')
    .description('the hosts added at runtime, as a declarative file kept in git (admin key)')
  withClientOptions(
    fleet
      .command('apply')
      .description("show what the file's hosts change, and apply it with --yes")
      .argument('<file>', 'a fleet file (YAML or JSON); its hosts: are applied')
      .option('--yes', 'apply the changes shown'),
  ).action(async (file: string, flags: ClientFlags & { yes?: boolean }) => {
    const { hosts: declared, ignored } = hostsOfFile(file)
    const client = clientFrom(flags)
    const body = { hosts: declared }
    const { changes } = await client.request<{ changes: FleetChange[] }>(
      'POST',
      flags.yes ? '/v2/admin/fleet/apply' : '/v2/admin/fleet/diff',
      body,
    )
    if (flags.json) return deps.print(JSON.stringify({ applied: !!flags.yes, changes }, null, 2))
    const lines: string[] = []
    if (ignored.length > 0)
      lines.push(`(${ignored.join(', ')}: the server's own fleet setting, not applied here)`)
    if (changes.length === 0) lines.push('no changes: the fleet already matches the file')
    else {
      lines.push(...changeLines(changes))
      lines.push(
        flags.yes
          ? `applied ${changes.length} change${changes.length === 1 ? '' : 's'}`
          : 'nothing changed yet: run again with --yes to apply',
      )
    }
    deps.print(lines.join('\n'))
  })
}
