import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The repository's text speaks for itself: a reader has no issue tracker to follow, so docs,
 * comments and test names say the reason or the measured fact, never a tracker's number.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const FOLDERS = [
  'src',
  'test',
  'docs',
  'bench',
  'console/src',
  'packages/worker/src',
  'deploy',
  'examples',
]
const FILES = ['README.md', 'Dockerfile', '.ci/run', '.ci/node22']
const SKIP = new Set(['node_modules', 'generated', 'dist'])
const TEXT = /\.(ts|tsx|js|mjs|cjs|md|sh|yaml|yml|json|py|html|css)$/

function textFiles(folder: string): string[] {
  const found: string[] = []
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue
    const path = join(folder, entry.name)
    if (entry.isDirectory()) found.push(...textFiles(path))
    else if (TEXT.test(entry.name)) found.push(path)
  }
  return found
}

const TRACKER_NUMBER = /\bissues? #?\d+|\bissue #\d+/i

describe('repository hygiene', () => {
  it('cites no issue tracker numbers in code, tests or docs', () => {
    const paths = [
      ...FOLDERS.flatMap((folder) => textFiles(join(ROOT, folder))),
      ...FILES.map((file) => join(ROOT, file)).filter((path) =>
        statSync(path, { throwIfNoEntry: false }),
      ),
    ]
    const citing = paths.flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .flatMap((line, index) =>
          TRACKER_NUMBER.test(line) ? [`${relative(ROOT, path)}:${index + 1}: ${line.trim()}`] : [],
        ),
    )
    expect(citing).toEqual([])
  })
})
