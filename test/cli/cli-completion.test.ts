import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'

/** Whether `shell` is installed (zsh and fish are optional; bash is always there). */
const installed = (shell: string) => spawnSync(shell, ['-c', 'exit 0']).status === 0

/**
 * `podyard completion bash|zsh|fish` (docs/cli.md, "Shell completion"): each script is valid in
 * its shell and, driven as the shell drives it, completes podyard's commands, runpodctl's
 * aliases and option values. Real bin; the shells as subprocesses.
 */
describe('podyard completion', () => {
  let dir: string
  const scripts: Record<string, string> = {}

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-completion-'))
    for (const shell of ['bash', 'zsh', 'fish']) {
      const result = await runCli(['completion', shell])
      expect(result.code, result.stderr).toBe(0)
      scripts[shell] = path.join(dir, `podyard.${shell}`)
      writeFileSync(scripts[shell], result.stdout)
    }
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** What bash's completion offers for the words typed so far (the last one being completed). */
  const bashComplete = (...words: string[]) =>
    execFileSync(
      'bash',
      [
        '-c',
        'source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _podyard; printf "%s\\n" "${COMPREPLY[@]}"',
        scripts.bash!,
        'podyard',
        ...words,
      ],
      { encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean)

  it('prints a bash script that bash accepts and that completes commands', () => {
    expect(spawnSync('bash', ['-n', scripts.bash!]).status).toBe(0)
    expect(bashComplete('po')).toEqual(['pods', 'pod', 'pools'])
    expect(bashComplete('pods', '')).toEqual(
      expect.arrayContaining(['list', 'get', 'create', 'terminate', 'delete', '--help']),
    )
    // Aliases lead to the same subcommands; options and their values complete too.
    expect(bashComplete('sls', 'l')).toEqual(['list'])
    expect(bashComplete('pods', 'list', '--ou')).toEqual(['--output'])
    expect(bashComplete('pods', 'list', '--output', '')).toEqual(['json', 'yaml', 'table'])
    expect(bashComplete('--json', 'endpoints', 'worker-l')).toEqual(['worker-logs'])
    expect(bashComplete('completion', '')).toEqual(['bash', 'zsh', 'fish'])
    expect(bashComplete('get', '')).toEqual(['pod'])
    // An option's value between the words is passed over.
    expect(bashComplete('--url', 'http://127.0.0.1:8080', 'volumes', 're')).toEqual([
      'resize',
      'rename',
      'remove',
    ])
    // The script registers itself for `podyard`.
    const registered = execFileSync(
      'bash',
      ['-c', 'source "$0"; complete -p podyard', scripts.bash!],
      {
        encoding: 'utf8',
      },
    )
    expect(registered.trim()).toBe('complete -F _podyard podyard')
  })

  it('prints a zsh script that zsh accepts and that offers the words of each command', () => {
    const script = scripts.zsh!
    if (!installed('zsh')) {
      // Without zsh here, its shape: a #compdef file that registers _podyard.
      expect(execFileSync('cat', [script], { encoding: 'utf8' })).toMatch(
        /^#compdef podyard\n[\s\S]*compdef _podyard podyard/,
      )
      return
    }
    expect(spawnSync('zsh', ['-n', script]).status).toBe(0)
    // compadd exists only inside zsh's completion system: a stand-in records what is offered.
    const offered = (...words: string[]) =>
      execFileSync(
        'zsh',
        [
          '-c',
          'source "$0"; compadd() { print -rl -- "${@[2,-1]}" }; words=(podyard "$@"); CURRENT=$#words; _podyard',
          script,
          ...words,
        ],
        { encoding: 'utf8' },
      )
        .split('\n')
        .filter(Boolean)
    expect(offered('')).toEqual(expect.arrayContaining(['pods', 'pod', 'serverless', 'completion']))
    expect(offered('sls', '')).toEqual(expect.arrayContaining(['list', 'get', 'rm']))
    expect(offered('pods', 'list', '-o', '')).toEqual(['json', 'yaml', 'table'])
  })

  it('prints a fish script that fish accepts and that completes commands', () => {
    const script = scripts.fish!
    if (!installed('fish')) {
      expect(execFileSync('cat', [script], { encoding: 'utf8' })).toContain(
        "complete -c podyard -f -a '(__podyard_complete)'",
      )
      return
    }
    expect(spawnSync('fish', ['-n', script]).status).toBe(0)
    const complete = (line: string) =>
      execFileSync('fish', ['-c', 'source $argv[1]; complete -C $argv[2]', script, line], {
        encoding: 'utf8',
      })
        .split('\n')
        .filter(Boolean)
    expect(complete('podyard sls l')).toEqual(['list'])
    expect(complete('podyard po')).toEqual(['pod', 'pods', 'pools'])
    expect(complete('podyard pods list --output ')).toEqual(['json', 'table', 'yaml'])
  })

  it('refuses a shell it has no script for, as a usage error', async () => {
    const result = await runCli(['completion', 'tcsh'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('no completion for "tcsh": bash, zsh, fish')
  })
})
