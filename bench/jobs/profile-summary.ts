/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. `run-bench.ts --cpu-prof`): self
 * time by function and by package or source file, the top entries of each.
 *
 *   npx tsx bench/jobs/profile-summary.ts bench/jobs/profiles/<file>.cpuprofile [--top=30]
 */
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

const file = process.argv.slice(2).find((arg) => !arg.startsWith('--'))
if (!file) throw new Error('usage: profile-summary.ts <file.cpuprofile> [--top=30]')
const top = Number(
  process.argv.find((arg) => arg.startsWith('--top='))?.slice('--top='.length) ?? '30',
)
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile

// Self time per node from the samples and their time deltas (µs).
const selfUs = new Map<number, number>()
profile.samples.forEach((nodeId, i) => {
  selfUs.set(nodeId, (selfUs.get(nodeId) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const total = [...selfUs.values()].reduce((a, b) => a + b, 0)

function place(url: string): string {
  if (url === '') return '(native or V8)'
  const modules = url.lastIndexOf('node_modules/')
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/')
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!
  }
  if (url.startsWith('node:')) return url
  const dist = url.indexOf('/dist/')
  return dist >= 0 ? url.slice(dist + 1) : url
}

const byFunction = new Map<string, number>()
const byPlace = new Map<string, number>()
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0
  if (us === 0) continue
  const { functionName, url, lineNumber } = node.callFrame
  const where = place(url)
  const fn = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us)
  byPlace.set(where, (byPlace.get(where) ?? 0) + us)
}

// Inclusive time (self and callees) per function, each function counted once per stack.
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map<number, number>()
for (const node of profile.nodes)
  for (const child of node.children ?? []) parent.set(child, node.id)
const nameOf = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame
  return `${functionName || '(anonymous)'}  ${place(url)}${url ? `:${lineNumber + 1}` : ''}`
}
const inclusive = new Map<string, number>()
for (const [nodeId, us] of selfUs) {
  const seen = new Set<string>()
  for (let id: number | undefined = nodeId; id !== undefined; id = parent.get(id)) {
    const name = nameOf(byId.get(id)!)
    if (seen.has(name)) continue
    seen.add(name)
    inclusive.set(name, (inclusive.get(name) ?? 0) + us)
  }
}

const show = (title: string, entries: Map<string, number>) => {
  console.log(`\n${title}`)
  for (const [name, us] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${((100 * us) / total).toFixed(1).padStart(6)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    )
  }
}
console.log(
  `${file}: ${(total / 1e6).toFixed(2)} s sampled over ${((profile.endTime - profile.startTime) / 1e6).toFixed(2)} s`,
)
show('self time by package or file', byPlace)
show('self time by function', byFunction)
const pattern = process.argv
  .find((arg) => arg.startsWith('--inclusive='))
  ?.slice('--inclusive='.length)
if (pattern !== undefined) {
  const matching = new Map([...inclusive].filter(([name]) => name.includes(pattern)))
  show(`inclusive time of functions matching "${pattern}"`, matching)
}
