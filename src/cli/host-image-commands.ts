import type { Command } from 'commander'
import { clientFrom, withClientOptions, type ClientFlags } from './client-options.js'
import { formatTable } from './format-table.js'
import { UsageError } from './usage-error.js'

export interface HostImageJson {
  hostId: string
  image: string
  state: 'PULLING' | 'PRESENT' | 'FAILED' | 'ABSENT'
  reason: string | null
  bytesDone: number | null
  bytesTotal: number | null
  startedAt: string
  updatedAt: string
}

const MIB = 1024 * 1024

/** `12.0/80.5 MiB`, or '' before the engine reported sizes. */
export function pullProgressText(row: HostImageJson): string {
  if (row.bytesTotal === null || row.bytesTotal === 0) return ''
  return `${((row.bytesDone ?? 0) / MIB).toFixed(1)}/${(row.bytesTotal / MIB).toFixed(1)} MiB`
}

export function hostImageTable(rows: readonly HostImageJson[]): string {
  if (rows.length === 0) return 'no images pulled ahead of time'
  return formatTable(
    ['HOST', 'IMAGE', 'STATE', 'PROGRESS', 'UPDATED', 'REASON'],
    rows.map((r) => [r.hostId, r.image, r.state, pullProgressText(r), r.updatedAt, r.reason ?? '']),
  )
}

/** Each `--host`, given once or more (commander's repeatable option). */
const collect = (value: string, previous: string[] = []) => [...previous, value]

/**
 * `podyard hosts images` and `podyard hosts pull` (docs/fleet.md, "Images ahead of time"):
 * which images are on which host, and pulls of pods' images ahead of time.
 */
export function addHostImageCommands(
  hosts: Command,
  deps: { print(text: string): void; pollMs?: number },
): void {
  withClientOptions(
    hosts
      .command('images')
      .description('the images pulled ahead of time on each host, with their state')
      .option('--host <host-id>', 'only this host')
      .option('--image <image>', 'only this image'),
  ).action(async (flags: ClientFlags & { host?: string; image?: string }) => {
    const query = new URLSearchParams({
      ...(flags.host ? { hostId: flags.host } : {}),
      ...(flags.image ? { image: flags.image } : {}),
    }).toString()
    const { images } = await clientFrom(flags).get<{ images: HostImageJson[] }>(
      `/v2/admin/hosts/images${query ? `?${query}` : ''}`,
    )
    deps.print(flags.json ? JSON.stringify(images, null, 2) : hostImageTable(images))
  })

  withClientOptions(
    hosts
      .command('pull')
      .description(
        "pull an image on the Docker hosts ahead of time (pods' images); waits and reports",
      )
      .argument('<image>', 'name[:tag] or name@digest, with its registry host if not Docker Hub')
      .option(
        '--host <host-id>',
        'only this host (repeatable); default: every Docker host',
        collect,
      )
      .option(
        '--registry-auth <id>',
        "one of the admin account's registry auths, for a private image",
      )
      .option('--no-wait', 'start the pulls and answer at once')
      .option('--timeout <seconds>', 'how long to wait for the pulls', '1800'),
  ).action(
    async (
      image: string,
      flags: ClientFlags & {
        host?: string[]
        registryAuth?: string
        wait: boolean
        timeout: string
      },
    ) => {
      const timeoutS = Number(flags.timeout)
      if (!Number.isFinite(timeoutS) || timeoutS <= 0)
        throw new UsageError(`--timeout must be a number of seconds, got "${flags.timeout}"`)
      const client = clientFrom(flags)
      const started = await client.request<{ images: HostImageJson[] }>(
        'POST',
        '/v2/admin/hosts/images/pull',
        {
          image,
          ...(flags.host ? { hostIds: flags.host } : {}),
          ...(flags.registryAuth ? { containerRegistryAuthId: flags.registryAuth } : {}),
        },
      )
      const hostIds = started.images.map((r) => r.hostId)
      if (hostIds.length === 0) return deps.print('no Docker host to pull on')
      let rows = started.images
      const seen = new Map<string, string>()
      const report = () => {
        for (const row of rows) {
          const line = `${row.hostId}: ${row.state}${pullProgressText(row) ? ` ${pullProgressText(row)}` : ''}${row.reason ? ` (${row.reason})` : ''}`
          if (!flags.json && seen.get(row.hostId) !== line) deps.print(line)
          seen.set(row.hostId, line)
        }
      }
      report()
      const deadline = Date.now() + timeoutS * 1000
      while (flags.wait && rows.some((r) => r.state === 'PULLING') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, deps.pollMs ?? 1000))
        const { images } = await client.get<{ images: HostImageJson[] }>(
          `/v2/admin/hosts/images?image=${encodeURIComponent(image)}`,
        )
        rows = images.filter((r) => hostIds.includes(r.hostId))
        report()
      }
      if (flags.json) deps.print(JSON.stringify(rows, null, 2))
      if (!flags.wait) return
      if (rows.some((r) => r.state === 'PULLING'))
        throw new Error(`the pulls did not end within ${timeoutS} s: see podyard hosts images`)
      const failed = rows.filter((r) => r.state === 'FAILED')
      if (failed.length > 0)
        throw new Error(`the pull failed on ${failed.map((r) => r.hostId).join(', ')}`)
    },
  )
}
