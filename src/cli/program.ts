import { Command } from 'commander'
import { addBillingCommands } from './billing-commands.js'
import { addCatalogCommands } from './catalog-commands.js'
import { addClustersCommands } from './clusters-commands.js'
import { addConfigOptions, type ConfigFlags } from './config-options.js'
import { addDevCommand, type DevDeps } from './dev-command.js'
import { addEndpointsCommands } from './endpoints-commands.js'
import { addHostsCommands } from './hosts-commands.js'
import { addJobsCommands } from './jobs-commands.js'
import { addModelsCommands } from './models-commands.js'
import { addPodsCommands } from './pods-commands.js'
import { addRegistriesCommands } from './registries-commands.js'
import { addStoreCommands, type StoreCommandDeps } from './store-commands.js'
import { addTemplatesCommands } from './templates-commands.js'
import { addVolumesCommands } from './volumes-commands.js'

export type { ConfigFlags } from './config-options.js'

export interface CliDeps extends DevDeps, StoreCommandDeps {
  serve(flags: ConfigFlags): Promise<void>
  progress(text: string): void
  sleep(ms: number): Promise<void>
  print(text: string): void
  now(): Date
}

export function buildProgram(deps: CliDeps): Command {
  const program = new Command('podyard')
    .description('Self-hostable GPU and CPU compute platform that speaks RunPod’s API')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => deps.print(s.trimEnd()) })

  addConfigOptions(
    program.command('serve').description('run the platform (API, GraphQL, job API)'),
    true,
  ).action((flags: ConfigFlags) => deps.serve(flags))

  addDevCommand(program, deps)
  addStoreCommands(program, deps)
  addCatalogCommands(program, deps)
  addPodsCommands(program, deps)
  addClustersCommands(program, deps)
  addTemplatesCommands(program, deps)
  addVolumesCommands(program, deps)
  addRegistriesCommands(program, deps)
  addEndpointsCommands(program, deps)
  addJobsCommands(program, deps)
  addBillingCommands(program, deps)
  addModelsCommands(program, deps)
  addHostsCommands(program, deps)

  return program
}
