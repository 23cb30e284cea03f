import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { repoRoot } from './cli.js'

/** One shell command of a ```sh, ```bash, ```shell or ```console block of the docs. */
export interface DocsCommand {
  /** README.md or docs/x.md. */
  file: string
  /** Line of the command's first line in the file. */
  line: number
  /** The command as written, its continuation lines joined, its trailing comment removed. */
  text: string
  /** The `# ...` lines right under it (documented output), without `# ` and `-> `. */
  shown: string[]
}

export interface DocsBlock {
  file: string
  line: number
  commands: DocsCommand[]
}

const SHELL_FENCE = /^\s*```(sh|bash|shell|console)\s*$/
/** A block without a language: a transcript when it has `$ ` lines (each a command, its output under it). */
const PLAIN_FENCE = /^\s*```\s*$/
const ANY_FENCE = /^\s*```/

/** README.md and every docs/*.md, relative to the checkout. */
export function docsFiles(): string[] {
  const docs = readdirSync(path.join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`)
  return ['README.md', ...docs]
}

/** The shell blocks of a markdown file, each split into its commands. */
export function shellBlocks(file: string, markdown: string): DocsBlock[] {
  const lines = markdown.split('\n')
  const blocks: DocsBlock[] = []
  let block: { line: number; plain: boolean; lines: Array<{ n: number; text: string }> } | undefined
  let inOtherFence = false
  lines.forEach((text, index) => {
    if (block) {
      if (ANY_FENCE.test(text)) {
        const commands = block.plain
          ? transcriptCommands(file, block.lines)
          : splitCommands(file, block.lines)
        if (commands.length > 0) blocks.push({ file, line: block.line, commands })
        block = undefined
      } else block.lines.push({ n: index + 1, text })
      return
    }
    if (inOtherFence) {
      if (ANY_FENCE.test(text)) inOtherFence = false
      return
    }
    if (SHELL_FENCE.test(text) || PLAIN_FENCE.test(text)) {
      block = { line: index + 1, plain: PLAIN_FENCE.test(text), lines: [] }
    } else if (ANY_FENCE.test(text)) inOtherFence = true
  })
  return blocks
}

/** Every shell block of README.md and docs/*.md. */
export function allDocsBlocks(): DocsBlock[] {
  return docsFiles().flatMap((file) =>
    shellBlocks(file, readFileSync(path.join(repoRoot, file), 'utf8')),
  )
}

/**
 * Joins continuation lines (a trailing backslash, or a quote still open), cuts the comment at
 * the end (a `#` after a space, outside quotes), and keeps the comment lines right under a
 * command as what it shows.
 */
function splitCommands(file: string, lines: Array<{ n: number; text: string }>): DocsCommand[] {
  const commands: DocsCommand[] = []
  let pending: { line: number; text: string } | undefined
  let last: DocsCommand | undefined
  for (const { n, text: raw } of lines) {
    const text = raw.replace(/^\s+/, pending ? ' ' : '')
    if (!pending) {
      if (text.trim() === '') {
        last = undefined
        continue
      }
      if (text.startsWith('#')) {
        last?.shown.push(text.replace(/^#\s?/, '').replace(/^->\s?/, ''))
        continue
      }
      pending = { line: n, text: '' }
    }
    const joined = pending.text + text
    const { code, open } = cutComment(joined)
    if (open) {
      pending.text = joined + '\n'
      continue
    }
    if (code.endsWith('\\')) {
      pending.text = code.slice(0, -1).trimEnd() + ' '
      continue
    }
    last = { file, line: pending.line, text: code.trim(), shown: [] }
    commands.push(last)
    pending = undefined
  }
  if (pending) throw new Error(`${file}:${pending.line}: a command that never ends`)
  return commands
}

/** A transcript's `$ ` lines as commands, the lines under each as what it shows. */
function transcriptCommands(
  file: string,
  lines: Array<{ n: number; text: string }>,
): DocsCommand[] {
  const commands: DocsCommand[] = []
  for (const { n, text } of lines) {
    const prompt = /^\s*\$ (.*)$/.exec(text)
    if (prompt) {
      commands.push({ file, line: n, text: cutComment(prompt[1]!).code.trim(), shown: [] })
    } else commands.at(-1)?.shown.push(text)
  }
  return commands
}

/** The command without its trailing comment; open: a quote is still open at the end. */
function cutComment(text: string): { code: string; open: boolean } {
  let quote: string | undefined
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quote) {
      if (c === quote) quote = undefined
      else if (c === '\\' && quote === '"') i++
      continue
    }
    if (c === '\\') i++
    else if (c === "'" || c === '"') quote = c
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      return { code: text.slice(0, i).trimEnd(), open: false }
    }
  }
  return { code: text.trimEnd(), open: quote !== undefined }
}

/** The key of a command in the test's lists: its file and its text, spaces collapsed. */
export function commandKey(command: { file: string; text: string }): string {
  return `${command.file}: ${command.text.replace(/\s+/g, ' ')}`
}

/**
 * A usage synopsis as commands to run: `[...]` (optional parts) left out, and a command word
 * such as `stop|start|restart` run once for each alternative, in order.
 */
export function expandSynopsis(text: string): string[] {
  if (!/^(echo .* \| )?podyard /.test(text)) return [text]
  const bare = text
    .replace(/\s*\[-(?:[^[\]]|\[[^\]]*\])*\]/g, '')
    .replace(/\s+\.\.\.$/, '')
    .trim()
  const alternatives = /(^|\s)([a-z-]+(?:\|[a-z-]+)+)(?=\s|$)/.exec(bare)
  if (!alternatives || /\s\|\s/.test(bare)) return [bare]
  return alternatives[2]!.split('|').map((word) => bare.replace(alternatives[2]!, word))
}
