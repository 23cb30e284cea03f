import type { Command } from 'commander'
import { clientFrom, withClientOptions } from './client-options.js'
import { formatTable } from './format-table.js'

function json(value: unknown): string {
  return JSON.stringify(value, null, 2)
}

/** `podyard catalog gpus|cpus|datacenters`: what a running server rents. */
export function addCatalogCommands(program: Command, deps: { print(text: string): void }): void {
  const catalog = program
    .command('catalog')
    .description('what can be rented, from a running server')
  const catalogOptions = withClientOptions

  catalogOptions(catalog.command('gpus').description('GPU types with prices and stock')).action(
    async (flags: { url?: string; apiKey?: string; json?: boolean }) => {
      const { gpus } = await clientFrom(flags).get<{ gpus: Array<Record<string, any>> }>(
        '/v2/catalog/gpus',
      )
      if (flags.json) return deps.print(json(gpus))
      deps.print(
        formatTable(
          ['ID', 'NAME', 'MEMORY', 'SECURE $/H', 'COMMUNITY $/H', 'MAX', 'STOCK'],
          gpus.map((g) => [
            g.id,
            g.name,
            `${g.memory} GB`,
            g.secure ? g.price.secure : '-',
            g.community ? g.price.community : '-',
            Math.max(g.maxCount.secure, g.maxCount.community),
            g.availability,
          ]),
        ),
      )
    },
  )

  catalogOptions(catalog.command('cpus').description('CPU flavors with prices and stock')).action(
    async (flags: { url?: string; apiKey?: string; json?: boolean }) => {
      const { cpus } = await clientFrom(flags).get<{ cpus: Array<Record<string, any>> }>(
        '/v2/catalog/cpus',
      )
      if (flags.json) return deps.print(json(cpus))
      deps.print(
        formatTable(
          ['ID', 'NAME', 'GROUP', 'VCPUS', 'RAM GB/VCPU', '$/VCPU/H', 'STOCK'],
          cpus.map((c) => [
            c.id,
            c.name,
            c.group,
            (c.vcpuCounts as number[]).join(','),
            c.ramGbPerVcpu,
            c.price.securePerVcpu,
            c.availability,
          ]),
        ),
      )
    },
  )

  catalogOptions(catalog.command('datacenters').description('data centers')).action(
    async (flags: { url?: string; apiKey?: string; json?: boolean }) => {
      const { dataCenters } = await clientFrom(flags).get<{
        dataCenters: Array<Record<string, any>>
      }>('/v2/catalog/datacenters')
      if (flags.json) return deps.print(json(dataCenters))
      deps.print(
        formatTable(
          ['ID', 'NAME', 'REGION', 'GLOBAL NETWORK', 'VOLUME TYPES'],
          dataCenters.map((d) => [
            d.id,
            d.name,
            d.region,
            d.globalNetwork,
            (d.networkVolumeTypes as string[]).join(','),
          ]),
        ),
      )
    },
  )
}
