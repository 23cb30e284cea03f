import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { GlobalNetworkFiles, hostsFileText } from './global-network-files.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '../../..')
const TSX = path.join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs')
const MODULE = path.join(here, 'global-network-files.ts')

/**
 * A process of its own changing one bridge's members through GlobalNetworkFiles, as a second
 * podyard server on the host would: `add <prefix> <count>` adds members one change at a time
 * (each reads the members, waits a little, as the real join does while it runs `ip`, then
 * writes them back); `flip <count>` adds and removes one member, so that the hosts file
 * changes size each time. Each starts at `startAt` (ms since the epoch), so that both overlap.
 */
const CHANGER = `
import { GlobalNetworkFiles } from ${JSON.stringify(MODULE)}
const [dir, bridge, mode, prefix, count, startAt] = process.argv.slice(2)
const files = new GlobalNetworkFiles(dir)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
await sleep(Math.max(0, Number(startAt) - Date.now()))
for (let i = 0; i < Number(count); i++) {
  await files.locked(bridge, async () => {
    const state = await files.read(bridge)
    await sleep(3)
    if (mode === 'add') {
      state.members[prefix + i] = { workloadId: prefix + i, address: '10.0.' + (prefix === 'a' ? 1 : 2) + '.' + (i + 1), aliases: [prefix + i + '.runpod.internal'] }
    } else if (state.members.flip) delete state.members.flip
    else state.members.flip = { workloadId: 'flip', address: '10.0.9.9', aliases: ['flip-'.repeat(40) + '.runpod.internal'] }
    await files.write(bridge, state)
  })
}
`

function runChanger(script: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [TSX, script, ...args], { timeout: 60_000 }, (error, _, stderr) =>
      error ? reject(new Error(`${error.message}: ${stderr}`)) : resolve(),
    )
  })
}

describe("the files of the process driver's global networks", () => {
  let dir: string
  let script: string

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-global-files-'))
    script = path.join(dir, 'changer.mts')
    writeFileSync(script, CHANGER)
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('writes a hosts file of localhost and each member by its names and its host name', () => {
    const text = hostsFileText([
      { workloadId: 'b', address: '10.217.0.9', aliases: ['b.runpod.internal'], hostname: 'b' },
      { workloadId: 'a', address: '10.217.0.5', aliases: ['a.runpod.internal'], hostname: 'a' },
    ])
    expect(text).toBe(
      '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' +
        '10.217.0.5\ta.runpod.internal a\n10.217.0.9\tb.runpod.internal b\n',
    )
  })

  it('loses no member when two processes change one bridge at the same time', async () => {
    const startAt = String(Date.now() + 1500)
    const count = 25
    await Promise.all([
      runChanger(script, [dir, 'pygtest', 'add', 'a', String(count), startAt]),
      runChanger(script, [dir, 'pygtest', 'add', 'b', String(count), startAt]),
    ])
    const files = new GlobalNetworkFiles(dir)
    const members = Object.keys((await files.read('pygtest')).members)
    expect(members.length).toBe(2 * count)
    const hosts = readFileSync(files.hostsFileOf('pygtest'), 'utf8')
    for (const id of members) expect(hosts).toContain(`\t${id}.runpod.internal`)
  }, 60_000)

  it('never shows a reader of the hosts file an empty or partly written one', async () => {
    const files = new GlobalNetworkFiles(dir)
    await files.locked('pygflip', () => files.write('pygflip', { members: {} }))
    const hostsFile = files.hostsFileOf('pygflip')
    const short = readFileSync(hostsFile, 'utf8')
    const changer = runChanger(script, [dir, 'pygflip', 'flip', '', '300', String(Date.now())])
    let done = false
    void changer.finally(() => (done = true)).catch(() => undefined)
    const seen = new Map<string, number>()
    // Reads as fast as it can between yields, for as long as the changer runs (bounded).
    const until = Date.now() + 50_000
    while (!done && Date.now() < until) {
      for (let i = 0; i < 200; i++) {
        const text = readFileSync(hostsFile, 'utf8')
        seen.set(text, (seen.get(text) ?? 0) + 1)
      }
      await new Promise((resolve) => setImmediate(resolve))
    }
    await changer
    const complete = [...seen.keys()].filter(
      (text) => text === short || (text.startsWith(short) && text.endsWith('.runpod.internal\n')),
    )
    expect([...seen.keys()].filter((text) => !complete.includes(text))).toEqual([])
    // Both states were seen: the reads overlapped the changes.
    expect(complete.length).toBe(2)
  }, 60_000)
})
