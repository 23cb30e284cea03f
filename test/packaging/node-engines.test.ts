import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import semver from 'semver'
import { describe, expect, it } from 'vitest'

/**
 * `engines` says which Node.js releases podyard runs on, and CI runs on both lines (20 and 22).
 * A dependency that declares a narrower range makes `npm install` print EBADENGINE and may use
 * what the older line lacks, so every package the lockfile installs must admit the first
 * release of each line that `engines` names.
 */
const ROOT = join(import.meta.dirname, '..', '..')

interface LockEntry {
  version?: string
  engines?: { node?: string } | string[]
  link?: boolean
  hasInstallScript?: boolean
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as T
}

const rootEngines = readJson<{ engines: { node: string } }>('package.json').engines.node
const workerEngines = readJson<{ engines: { node: string } }>('packages/worker/package.json')
  .engines.node

/** The first release of each line the range names: `^20.19.0 || ^22.13.0` gives both floors. */
function floors(range: string): string[] {
  return range.split('||').map((part) => semver.minVersion(part.trim())?.version ?? part)
}

describe('Node.js engines', () => {
  it('names Node.js 20 and 22, and the worker SDK the same releases', () => {
    expect(floors(rootEngines).map((version) => semver.major(version))).toEqual([20, 22])
    expect(semver.satisfies('24.0.0', rootEngines)).toBe(false)
    expect(workerEngines).toBe(rootEngines)
  })

  it('installs no package whose engines exclude a Node.js release podyard supports', () => {
    const lock = readJson<{ packages: Record<string, LockEntry> }>('package-lock.json')
    const excluding: string[] = []
    for (const [path, entry] of Object.entries(lock.packages)) {
      // Old lockfiles wrote engines as an array of strings; npm ignores those, and so does this.
      const node = entry.engines && !Array.isArray(entry.engines) ? entry.engines.node : undefined
      if (!node || entry.link) continue
      for (const version of floors(rootEngines)) {
        if (!semver.satisfies(version, node)) {
          excluding.push(
            `${path || 'podyard'}@${entry.version ?? ''} needs node ${node}: not ${version}`,
          )
        }
      }
    }
    expect(excluding).toEqual([])
  })
})

describe('install scripts', () => {
  // npm runs a dependency's install script only when package.json's `allowScripts` allows it,
  // and ends every install with a warning naming each one it has no entry for. Each is decided:
  // allowed (true) or left out on purpose (false; docs/development.md).
  it('has every dependency with an install script allowed or denied in allowScripts', () => {
    const lock = readJson<{ packages: Record<string, LockEntry> }>('package-lock.json')
    const allowScripts = readJson<{ allowScripts: Record<string, boolean> }>(
      'package.json',
    ).allowScripts
    const scripted = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([at]) => at.slice(at.lastIndexOf('node_modules/') + 'node_modules/'.length))
    expect(scripted).toContain('better-sqlite3')
    expect([...new Set(scripted)].filter((name) => !(name in allowScripts))).toEqual([])
    expect(allowScripts['better-sqlite3']).toBe(true)
  })
})
