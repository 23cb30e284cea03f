import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { GpuSampler, type SampledGpu } from './gpu-sampler.js'

const GPU0 = '0, GPU-a, 00000000:19:00.0, 5, 1, 10, 81559, 40, 70.0, 0x1, 0, No'
const GPU1 = '1, GPU-b, 00000000:3B:00.0, 7, 1, 10, 81559, 40, 70.0, 0x1, 0, No'

/** A stand-in nvidia-smi whose -lms loop prints `first` once, then `then` every 100 ms. */
function script(dir: string, first: string, then: string): string {
  const file = path.join(dir, 'nvidia-smi')
  writeFileSync(
    file,
    `#!/bin/sh
case "$*" in
  *-lms*) printf '%s\\n' "${first}"; while :; do sleep 0.15; printf '%s\\n' "${then}"; done ;;
  *) exit 1 ;;
esac
`,
  )
  chmodSync(file, 0o755)
  return file
}

describe('GpuSampler', () => {
  let dir: string | undefined
  let sampler: GpuSampler | undefined
  afterEach(() => {
    sampler?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  async function rounds(first: string, then: string, wanted: (seen: SampledGpu[][]) => boolean) {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-sampler-'))
    const seen: SampledGpu[][] = []
    sampler = new GpuSampler({
      logger: pino({ level: 'silent' }),
      command: script(dir, first, then),
      onRound: (round) => seen.push(round),
    })
    sampler.start()
    const deadline = Date.now() + 10_000
    while (!wanted(seen) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    return seen
  }

  it('reads every GPU each round from one long-lived process', async () => {
    const seen = await rounds(`${GPU0}\n${GPU1}`, `${GPU0}\n${GPU1}`, (all) => all.length > 5)
    expect(seen.length).toBeGreaterThan(5)
    expect(seen.at(-1)!.map((g) => [g.index, g.utilPercent, g.lost])).toEqual([
      [0, 5, false],
      [1, 7, false],
    ])
    expect(sampler!.starts).toBe(1)
  }, 15_000)

  it('marks a GPU lost after three rounds without it, and at once on a device-handle error', async () => {
    const missing = await rounds(`${GPU0}\n${GPU1}`, GPU0, (all) =>
      all.some((r) => r[1]?.lost === true),
    )
    const firstLost = missing.findIndex((r) => r[1]?.lost === true)
    // Three rounds without GPU 1 before it counts as lost.
    expect(firstLost).toBeGreaterThanOrEqual(3)
    sampler!.stop()
    rmSync(dir!, { recursive: true, force: true })

    const handle = 'Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error'
    const erred = await rounds(`${GPU0}\n${GPU1}`, `${GPU0}\n${handle}`, (all) =>
      all.some((r) => r[1]?.lost === true),
    )
    expect(erred.findIndex((r) => r[1]?.lost === true)).toBe(1)
  }, 25_000)
})
