import { InvalidArgumentError, type Command } from 'commander'
import { RUNPODCTL_FORMS } from './runpodctl-aliases.js'

export const SHELLS = ['bash', 'zsh', 'fish'] as const
type Shell = (typeof SHELLS)[number]

/** Words an option's value is completed from (the rest are free text). */
const OPTION_VALUES: Record<string, string[]> = {
  '--output': ['json', 'yaml', 'table'],
  '-o': ['json', 'yaml', 'table'],
}

/**
 * What may follow each command path: its subcommands (and their aliases) and its options, for
 * every path a user may type (aliases included). The key '' is podyard itself.
 */
export function completionTable(program: Command): Map<string, string[]> {
  const table = new Map<string, string[]>()
  const visit = (command: Command, paths: string[]) => {
    const words = [
      ...command.commands.flatMap((child) => [child.name(), ...child.aliases()]),
      ...command.options.flatMap((option) => [option.long, option.short]),
      '--help',
    ].filter((word): word is string => word !== undefined)
    for (const path of paths) table.set(path, [...new Set(words)])
    for (const child of command.commands) {
      const names = [child.name(), ...child.aliases()]
      visit(
        child,
        paths.flatMap((path) => names.map((name) => (path ? `${path} ${name}` : name))),
      )
    }
  }
  visit(program, [''])
  table.set('completion', [...SHELLS])
  // runpodctl's two-word forms (rewritten before parsing): offered after podyard's own words.
  for (const [verb, nouns] of Object.entries(RUNPODCTL_FORMS)) {
    if (!table.has(verb)) table.set(verb, nouns)
    table.get('')!.push(verb)
  }
  table.set('', [...new Set(table.get(''))])
  return table
}

/** A shell word list, quoted for a single-quoted shell string (the words are plain). */
const wordList = (words: string[]) => words.join(' ')

/** The two lookups both POSIX-like shells' scripts share: a command path's words, an option's values. */
function lookupFunctions(cases: string, values: string): string {
  return `_podyard_words() {
  case "$1" in
${cases}
    *) return 1 ;;
  esac
}
_podyard_values() {
  case "$1" in
${values}
    *) return 1 ;;
  esac
}
`
}

function bashScript(table: Map<string, string[]>): string {
  const cases = [...table]
    .map(([path, words]) => `    '${path}') echo '${wordList(words)}' ;;`)
    .join('\n')
  const values = Object.entries(OPTION_VALUES)
    .map(([option, words]) => `    ${option}) echo '${wordList(words)}'; return 0 ;;`)
    .join('\n')
  return `# podyard bash completion: source it, or save it as
# ~/.local/share/bash-completion/completions/podyard
${lookupFunctions(cases, values)}_podyard() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmdpath="" next i words
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) continue ;; esac
    next="\${cmdpath:+$cmdpath }\${COMP_WORDS[i]}"
    if _podyard_words "$next" >/dev/null; then cmdpath="$next"; fi
  done
  if ((COMP_CWORD > 1)) && words="$(_podyard_values "\${COMP_WORDS[COMP_CWORD - 1]}")"; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    return 0
  fi
  COMPREPLY=($(compgen -W "$(_podyard_words "$cmdpath")" -- "$cur"))
}
complete -F _podyard podyard
`
}

function zshScript(table: Map<string, string[]>): string {
  const cases = [...table]
    .map(([path, words]) => `    '${path}') print -r -- '${wordList(words)}' ;;`)
    .join('\n')
  const values = Object.entries(OPTION_VALUES)
    .map(([option, words]) => `    ${option}) print -r -- '${wordList(words)}' ;;`)
    .join('\n')
  // `path` is zsh's array tied to PATH: the command path is `cmdpath`.
  return `#compdef podyard
# podyard zsh completion: save it as _podyard in a directory on $fpath, or source it after
# compinit.
${lookupFunctions(cases, values)}_podyard() {
  local cmdpath="" next w values
  for w in "\${(@)words[2,CURRENT-1]}"; do
    [[ $w == -* ]] && continue
    next="\${cmdpath:+$cmdpath }$w"
    _podyard_words "$next" >/dev/null && cmdpath="$next"
  done
  if (( CURRENT > 2 )) && values="$(_podyard_values "\${words[CURRENT-1]}")"; then
    compadd -- \${=values}
    return
  fi
  compadd -- \${=$(_podyard_words "$cmdpath")}
}
if (( $+functions[compdef] )); then
  compdef _podyard podyard
fi
`
}

function fishScript(table: Map<string, string[]>): string {
  const cases = [...table]
    .map(([path, words]) => `    case '${path}'\n        echo '${wordList(words)}'`)
    .join('\n')
  const values = Object.entries(OPTION_VALUES)
    .map(([option, words]) => `    case '${option}'\n        echo '${wordList(words)}'`)
    .join('\n')
  return `# podyard fish completion: save it as ~/.config/fish/completions/podyard.fish
function __podyard_words
    switch "$argv[1]"
${cases}
    case '*'
        return 1
    end
end
function __podyard_values
    switch "$argv[1]"
${values}
    case '*'
        return 1
    end
end
function __podyard_complete
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmdpath ''
    for w in $tokens
        string match -q -- '-*' $w; and continue
        set -l next (string trim -- "$cmdpath $w")
        if __podyard_words "$next" >/dev/null
            set cmdpath $next
        end
    end
    if test (count $tokens) -gt 0
        set -l values (__podyard_values $tokens[-1])
        and begin
            string split ' ' -- $values
            return
        end
    end
    string split ' ' -- (__podyard_words "$cmdpath")
end
complete -c podyard -f -a '(__podyard_complete)'
`
}

/** `podyard completion bash|zsh|fish`: the shell's completion script, on stdout. */
export function addCompletionCommand(program: Command, deps: { print(text: string): void }): void {
  program
    .command('completion')
    .description('print a shell completion script: bash, zsh or fish (docs/cli.md)')
    .argument('<shell>', SHELLS.join(', '))
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) {
        throw new InvalidArgumentError(`no completion for "${shell}": ${SHELLS.join(', ')}`)
      }
      const table = completionTable(program)
      const script = { bash: bashScript, zsh: zshScript, fish: fishScript }[shell as Shell]
      deps.print(script(table).trimEnd())
    })
}
