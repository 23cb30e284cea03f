import { Command } from 'commander'
import { addAccountCommand } from './account-commands.js'
import { addBillingCommands } from './billing-commands.js'
import { addCatalogCommands } from './catalog-commands.js'
import { addClustersCommands } from './clusters-commands.js'
import { addConfigCommands } from './config-commands.js'
import { addConfigOptions, type ConfigFlags } from './config-options.js'
import { addCompletionCommand } from './completion-command.js'
import { addDevCommand, type DevDeps } from './dev-command.js'
import { addEndpointsCommands } from './endpoints-commands.js'
import { addHostsCommands } from './hosts-commands.js'
import { addHostChangeCommands } from './host-change-commands.js'
import { addPoolCommands } from './pool-commands.js'
import { addJobsCommands } from './jobs-commands.js'
import { addModelsCommands } from './models-commands.js'
import { addOutputOptions, jsonToYaml, resolveOutput } from './output-format.js'
import { addPodsCommands } from './pods-commands.js'
import { addRegistriesCommands } from './registries-commands.js'
import { addSecretsCommands } from './secrets-commands.js'
import { addRunpodctlAliases, RUNPODCTL_FORMS } from './runpodctl-aliases.js'
import { addStoreCommands, type StoreCommandDeps } from './store-commands.js'
import { addTemplatesCommands } from './templates-commands.js'
import { addVolumesCommands } from './volumes-commands.js'

export type { ConfigFlags } from './config-options.js'

export interface CliDeps extends DevDeps, StoreCommandDeps {
  /** podyard's version, for --version. */
  version: string
  /** Where commander's own errors (usage, unknown options) go. */
  writeError(text: string): void
  serve(flags: ConfigFlags & { json?: boolean }): Promise<void>
  progress(text: string): void
  sleep(ms: number): Promise<void>
  print(text: string): void
  now(): Date
}

export function buildProgram(given: CliDeps): Command {
  // With --output yaml the commands print JSON (their --json) and it becomes YAML here; each
  // print is one document, so a stream of them is separated as YAML separates documents.
  let yaml = false
  let printed = 0
  const deps: CliDeps = {
    ...given,
    print: (text) =>
      given.print(yaml ? `${printed++ > 0 ? '---\n' : ''}${jsonToYaml(text)}` : text),
  }
  const program = new Command('podyard')
    .description('Self-hostable GPU and CPU compute platform that speaks RunPod’s API')
    .version(deps.version, '-V, --version', "print podyard's version")
    .showHelpAfterError()
    .configureOutput({
      writeOut: (s) => deps.print(s.trimEnd()),
      writeErr: (s) => deps.writeError(s),
    })
    // Set before the commands are added, so that they inherit it: commander's errors (usage,
    // unknown options) are thrown to run(), which reports them, as JSON with --json.
    .exitOverride()

  addConfigOptions(
    program.command('serve').description('run the platform (API, GraphQL, job API)'),
    true,
  )
    .option('--json', 'print a JSON line when ready and one when stopped; the log on stderr')
    .action((flags: ConfigFlags & { json?: boolean }) => deps.serve(flags))

  addDevCommand(program, deps)
  addConfigCommands(program, deps)
  addStoreCommands(program, deps)
  addAccountCommand(program, deps)
  addCatalogCommands(program, deps)
  addPodsCommands(program, deps)
  addClustersCommands(program, deps)
  addTemplatesCommands(program, deps)
  addVolumesCommands(program, deps)
  addRegistriesCommands(program, deps)
  addSecretsCommands(program, deps)
  addEndpointsCommands(program, deps)
  addJobsCommands(program, deps)
  addBillingCommands(program, deps)
  addModelsCommands(program, deps)
  addHostsCommands(program, deps)
  addHostChangeCommands(program, deps)
  addPoolCommands(program, deps)

  program
    .command('version')
    .description("print podyard's version (as --version does)")
    .action(() => deps.print(deps.version))
  addRunpodctlAliases(program)
  program.addHelpText(
    'after',
    `\nrunpodctl's forms work too: ${Object.entries(RUNPODCTL_FORMS)
      .map(([verb, [noun]]) => `${verb} ${noun}`)
      .join(
        ', ',
      )}, and nouns such as pod, serverless (sls), template, volume (nv). See docs/cli.md.`,
  )
  addCompletionCommand(program, deps)
  addOutputOptions(program)
  program.hook('preAction', (_program, action) => {
    yaml = resolveOutput(action) === 'yaml'
  })
  return program
}
