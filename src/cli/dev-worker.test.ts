import { describe, expect, it } from 'vitest'
import { workerCommand, type WorkerCommandInput } from './dev-worker.js'

const base: Omit<WorkerCommandInput, 'file' | 'kind'> = {
  python: 'python3',
  node: '/usr/bin/node',
  tsxLoader: 'file:///p/node_modules/tsx/dist/loader.mjs',
  nodePreload: 'file:///p/dist/cli/dev-node-preload.js',
}

describe("the command of podyard dev's worker", () => {
  it("preloads podyard's resolution of the worker SDK into Node.js handlers, after tsx", () => {
    expect(workerCommand({ ...base, file: '/w/handler.js', kind: 'javascript' })).toBe(
      'cd /w && exec /usr/bin/node --import file:///p/dist/cli/dev-node-preload.js handler.js',
    )
    expect(workerCommand({ ...base, file: '/w/handler.ts', kind: 'typescript' })).toBe(
      'cd /w && exec /usr/bin/node --import file:///p/node_modules/tsx/dist/loader.mjs ' +
        '--import file:///p/dist/cli/dev-node-preload.js handler.ts',
    )
    expect(workerCommand({ ...base, file: '/w/handler.py', kind: 'python' })).toBe(
      'cd /w && exec python3 -u handler.py',
    )
  })

  it('runs every Node.js handler through tsx when podyard runs from its sources', () => {
    const nodePreload = 'file:///p/src/cli/dev-node-preload.ts'
    expect(workerCommand({ ...base, nodePreload, file: '/w/h.mjs', kind: 'javascript' })).toBe(
      `cd /w && exec /usr/bin/node --import ${base.tsxLoader} --import ${nodePreload} h.mjs`,
    )
  })
})
