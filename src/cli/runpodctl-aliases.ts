import type { Command } from 'commander'

/**
 * runpodctl's nouns and verbs as aliases of podyard's commands (docs/cli.md, "Coming from
 * runpodctl"), where the name means the same thing and takes no name of podyard's own.
 * Keyed by the podyard command's path.
 */
const COMMAND_ALIASES: Record<string, string[]> = {
  pods: ['pod'],
  'pods terminate': ['delete', 'rm', 'remove'],
  endpoints: ['serverless', 'sls', 'endpoint'],
  'endpoints delete': ['rm', 'remove'],
  templates: ['template', 'tpl'],
  'templates delete': ['rm', 'remove'],
  volumes: ['volume', 'network-volume', 'nv'],
  'volumes delete': ['rm', 'remove'],
  registries: ['registry', 'reg'],
  'registries delete': ['rm', 'remove'],
  secrets: ['secret'],
  'secrets delete': ['rm', 'remove'],
  account: ['user', 'me'],
  'billing volumes': ['network-volume', 'nv'],
}

/**
 * runpodctl's two-word forms that have no one podyard command to alias: its verb-first legacy
 * commands (`get pod`, `create pod`, ...) and its `gpu list` / `datacenter list`. The words are
 * replaced before commander reads the command line.
 */
const REWRITES: Array<{ from: string[]; to: string[] }> = [
  { from: ['create', 'pod'], to: ['pods', 'create'] },
  { from: ['remove', 'pod'], to: ['pods', 'terminate'] },
  { from: ['start', 'pod'], to: ['pods', 'start'] },
  { from: ['stop', 'pod'], to: ['pods', 'stop'] },
  ...['gpu', 'gpus'].map((noun) => ({ from: [noun, 'list'], to: ['catalog', 'gpus'] })),
  ...['datacenter', 'datacenters', 'dc'].map((noun) => ({
    from: [noun, 'list'],
    to: ['catalog', 'datacenters'],
  })),
]

/** The first words of the rewritten forms, for help and shell completion. */
export const RUNPODCTL_FORMS: Record<string, string[]> = {
  get: ['pod'],
  create: ['pod'],
  remove: ['pod'],
  start: ['pod'],
  stop: ['pod'],
  gpu: ['list'],
  gpus: ['list'],
  datacenter: ['list'],
  datacenters: ['list'],
  dc: ['list'],
}

/** Gives the commands of `program` runpodctl's names as aliases. */
export function addRunpodctlAliases(program: Command): void {
  for (const [path, aliases] of Object.entries(COMMAND_ALIASES)) {
    let command: Command | undefined = program
    for (const name of path.split(' ')) {
      command = command?.commands.find((child) => child.name() === name)
    }
    if (command === undefined) throw new Error(`no command "${path}" to alias`)
    command.aliases(aliases)
  }
}

/**
 * `argv` (node, script, args...) with runpodctl's two-word forms replaced by podyard's:
 * `get pod` lists pods and `get pod <id>` shows one, as runpodctl's `get pod [id]` does.
 */
export function rewriteRunpodctlForms(argv: readonly string[]): string[] {
  const [node = '', script = '', ...args] = argv
  const starts = (words: string[]) => words.every((word, i) => args[i] === word)
  if (starts(['get', 'pod']) || starts(['get', 'pods'])) {
    const id = args[2]
    const shown = id !== undefined && !id.startsWith('-')
    return [node, script, 'pods', shown ? 'get' : 'list', ...args.slice(2)]
  }
  for (const { from, to } of REWRITES) {
    if (starts(from)) return [node, script, ...to, ...args.slice(from.length)]
  }
  return [...argv]
}
