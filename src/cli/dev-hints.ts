import path from 'node:path'
import { shellQuote, type HandlerKind } from './dev-worker.js'

/**
 * Import names that are not the name of the package installing them, for the few Python
 * packages where the difference is well known (the hint would name a package that is not there).
 */
const PIP_NAMES: Record<string, string> = {
  PIL: 'pillow',
  cv2: 'opencv-python',
  yaml: 'pyyaml',
  sklearn: 'scikit-learn',
  bs4: 'beautifulsoup4',
  dotenv: 'python-dotenv',
}

/** The npm package a Node.js module specifier names; none for a path or a built-in. */
export function npmPackageOf(specifier: string): string | undefined {
  if (/^(\.|\/|[a-z]+:)/i.test(specifier) || specifier.includes('\\')) return undefined
  const parts = specifier.split('/')
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
  return /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(name) ? name : undefined
}

/**
 * The package a line of a handler's output says is missing: Node's `Cannot find package 'x'`
 * (ES modules) and `Cannot find module 'x'` (CommonJS, and ES modules for a file), Python's
 * `ModuleNotFoundError: No module named 'x'`. A missing file is no package: none.
 */
export function missingPackageOf(kind: HandlerKind, line: string): string | undefined {
  if (kind === 'python') {
    const match = /ModuleNotFoundError: No module named '([^']+)'/.exec(line)
    if (!match) return undefined
    const top = match[1]!.split('.')[0]!
    return PIP_NAMES[top] ?? top
  }
  const match = /\bCannot find (?:package|module) '([^']+)'/.exec(line)
  return match ? npmPackageOf(match[1]!) : undefined
}

export interface HintInput {
  /** The handler file, absolute. */
  file: string
  kind: HandlerKind
  /** The interpreter of Python handlers (`--python`, else `python3`). */
  python: string
}

/**
 * The one line `podyard dev` prints when a handler's worker died of an import of a package not
 * installed: what to run, and where (docs/dev.md, "When an import fails").
 */
export function installHint(input: HintInput, pkg: string): string {
  const name = path.basename(input.file)
  const install =
    input.kind === 'python'
      ? `\`${shellQuote(input.python)} -m pip install ${pkg}\` (the interpreter it runs under; --python picks another)`
      : `\`npm install ${pkg}\` in ${shellQuote(path.dirname(input.file))}`
  return (
    `podyard dev: ${name} cannot import ${pkg}, which is not installed: run ${install}; ` +
    'the worker is restarted meanwhile and starts once it is there'
  )
}
