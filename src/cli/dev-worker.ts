import path from 'node:path'

/** What runs a handler file: Python's interpreter, or Node.js (through tsx for TypeScript). */
export type HandlerKind = 'python' | 'typescript' | 'javascript'

const KINDS: Record<string, HandlerKind> = {
  '.py': 'python',
  '.ts': 'typescript',
  '.mts': 'typescript',
  '.cts': 'typescript',
  '.js': 'javascript',
  '.mjs': 'javascript',
  '.cjs': 'javascript',
}

export const HANDLER_EXTENSIONS = Object.keys(KINDS)

/** runpod-python's convention: the job a handler is tried with, beside it. */
export const TEST_INPUT_FILE = 'test_input.json'

export function handlerKind(file: string): HandlerKind | undefined {
  return KINDS[path.extname(file).toLowerCase()]
}

/** A word for /bin/sh: single-quoted unless it is plainly safe. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word
  return `'${word.replaceAll("'", `'\\''`)}'`
}

export interface WorkerCommandInput {
  /** The handler file, absolute. */
  file: string
  kind: HandlerKind
  /** The Python interpreter: `--python`, else `python3` from PATH. */
  python: string
  /** Node.js's executable (the one podyard runs on). */
  node: string
  /** tsx's loader, as a file URL, from podyard's own dependencies (none needed in the folder). */
  tsxLoader: string
  /**
   * podyard's preload for Node.js handlers (dev-node-preload, as a file URL): the worker SDK
   * resolvable without installing it. A `.ts` one (podyard run from its sources, through tsx)
   * needs tsx to load, so then every Node.js handler runs through tsx.
   */
  nodePreload: string
}

/**
 * The endpoint's `args`: run from the handler's folder (so that relative paths mean what they
 * mean to `python handler.py` there), with `exec` so that the platform's SIGTERM reaches the
 * handler's process itself.
 */
export function workerCommand(input: WorkerCommandInput): string {
  const dir = shellQuote(path.dirname(input.file))
  const file = shellQuote(path.basename(input.file))
  const run = (() => {
    if (input.kind === 'python') return `${shellQuote(input.python)} -u ${file}`
    const imports: string[] = []
    if (input.kind === 'typescript' || /\.[cm]?ts$/.test(input.nodePreload)) {
      imports.push(input.tsxLoader)
    }
    imports.push(input.nodePreload)
    const flags = imports.map((loader) => `--import ${shellQuote(loader)}`).join(' ')
    return `${shellQuote(input.node)} ${flags} ${file}`
  })()
  return `cd ${dir} && exec ${run}`
}

/**
 * Variables of the developer's own environment a handler needs to find what they installed:
 * the platform gives a worker its own HOME (its disk), so `pip install --user` packages and
 * caches under the real home would be lost without them.
 */
const PASSED_THROUGH = [
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'PYTHONPATH',
  'NODE_PATH',
  'HF_HOME',
  'HF_TOKEN',
  'TRANSFORMERS_CACHE',
  'TORCH_HOME',
  'LANG',
  'LC_ALL',
  'TZ',
]

export interface WorkerEnvInput {
  kind: HandlerKind
  concurrency: number | undefined
  /** `--env NAME=value` pairs, which win over everything else here. */
  userEnv: Record<string, string>
  /** The developer's environment (process.env) and home directory. */
  devEnv: Record<string, string | undefined>
  home: string
}

/** The endpoint's `env` for a handler under `podyard dev` (docs/dev.md, "What the worker gets"). */
export function workerEnv(input: WorkerEnvInput): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of PASSED_THROUGH) {
    const value = input.devEnv[name]
    if (value !== undefined && value !== '') env[name] = value
  }
  env.XDG_CACHE_HOME = input.devEnv.XDG_CACHE_HOME || path.join(input.home, '.cache')
  if (input.kind === 'python') {
    env.PYTHONUSERBASE = input.devEnv.PYTHONUSERBASE || path.join(input.home, '.local')
    env.PYTHONUNBUFFERED = '1'
    // runpod-python's fitness checks before its worker loop (memory, disk, CUDA, a GPU test
    // binary) fail or hang on a laptop without GPUs or network (wire-compat §5.1).
    env.RUNPOD_SKIP_AUTO_SYSTEM_CHECKS = 'true'
    env.RUNPOD_SKIP_GPU_CHECK = 'true'
  }
  if (input.concurrency !== undefined) env.PODYARD_WORKER_CONCURRENCY = String(input.concurrency)
  return { ...env, ...input.userEnv }
}
