import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Docker from 'dockerode'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GpuSampler, type SampledGpu } from '../gpu/gpu-sampler.js'
import { GPU_SAMPLER_LABEL, NvidiaSmiContainer } from './nvidia-smi-container.js'

/**
 * A remote engine's GPU sampler container, on this machine's engine (PODYARD_TEST_DOCKER=1),
 * which has no GPU and no `nvidia` runtime: the image carries a stand-in nvidia-smi (a shell
 * script printing the sampler's query lines) and the container runs on the engine's default
 * runtime. What it proves is the container's part (created, attached, read line by line into
 * rounds, one-off queries by exec, replaced when it exits, removed when stopped), not a GPU.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('GPU sampler container test skipped: set PODYARD_TEST_DOCKER=1')

const IMAGE = 'podyard-test/nvidia-smi-standin:1'
const GPU0 = '0, GPU-a, 00000000:19:00.0, 37, 1, 10, 81559, 40, 70.0, 0x1, 0, No'
const GPU1 = '1, GPU-b, 00000000:3B:00.0, 91, 1, 10, 81559, 40, 70.0, 0x1, 0, No'
const REMAP = '00000000:19:00.0, GPU-a, 0, 1, 1, 0'

/** Prints both GPUs every 200 ms for -lms (ten rounds, then exits 3), the remap line once. */
const STANDIN = `#!/bin/sh
case "$*" in
  *-lms*) i=0; while [ $i -lt 10 ]; do echo "${GPU0}"; echo "${GPU1}"; sleep 0.2; i=$((i+1)); done; exit 3 ;;
  *remapped*) echo "${REMAP}" ;;
  *) exit 1 ;;
esac
`

describe.runIf(enabled)('NvidiaSmiContainer', () => {
  const docker = new Docker()
  const serverId = `sampler-test-${process.pid}`
  let sampler: GpuSampler | undefined

  beforeAll(() => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-standin-'))
    writeFileSync(path.join(dir, 'nvidia-smi'), STANDIN, { mode: 0o755 })
    writeFileSync(
      path.join(dir, 'Dockerfile'),
      'FROM podyard-conformance/plain:1\nCOPY nvidia-smi /usr/bin/nvidia-smi\n',
    )
    execFileSync('docker', ['build', '-q', '-t', IMAGE, dir], { stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
  }, 120_000)

  afterAll(async () => {
    sampler?.stop()
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${GPU_SAMPLER_LABEL}=${serverId}`] },
    })
    // The stopped sampler removes its container too: one gone meanwhile is not a failure.
    for (const c of left) {
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch((error: { statusCode?: number }) => {
          if (error.statusCode !== 404) throw error
        })
    }
  })

  async function containers(): Promise<number> {
    const listed = await docker.listContainers({
      all: true,
      filters: { label: [`${GPU_SAMPLER_LABEL}=${serverId}`] },
    })
    return listed.length
  }

  it('reads rounds through the container, remapped rows by exec, starts it again when it exits, and removes it when stopped', async () => {
    const rounds: SampledGpu[][] = []
    sampler = new GpuSampler({
      logger: pino({ level: 'silent' }),
      source: new NvidiaSmiContainer(docker, {
        serverId,
        image: IMAGE,
        where: 'this engine',
        runtime: null,
      }),
      onRound: (round) => rounds.push(round),
      intervalMs: 200,
      remappedRowsIntervalMs: 300,
    })
    sampler.start()
    await expect.poll(() => rounds.length, { timeout: 20_000 }).toBeGreaterThan(2)
    expect(rounds.at(-1)!.map((g) => [g.index, g.uuid, g.utilPercent])).toEqual([
      [0, 'GPU-a', 37],
      [1, 'GPU-b', 91],
    ])
    // The one-off query runs in the container once it runs: the remap line reaches GPU 0.
    await expect.poll(() => rounds.at(-1)![0]!.remappedRowsPending, { timeout: 20_000 }).toBe(true)
    expect(await containers()).toBe(1)
    // The stand-in exits after ten rounds: the sampler starts a new container.
    await expect.poll(() => sampler!.starts, { timeout: 30_000 }).toBeGreaterThan(1)
    sampler.stop()
    await expect.poll(containers, { timeout: 10_000 }).toBe(0)
  }, 90_000)

  it('says why when the engine cannot run the container', async () => {
    const source = new NvidiaSmiContainer(docker, {
      serverId,
      image: IMAGE,
      where: 'this engine',
      runtime: 'no-such-runtime',
    })
    const why = await new Promise<string>((resolve) => {
      source.follow(['-L'], () => undefined, resolve)
    })
    expect(why).toMatch(/^the sampler container on this engine: .*no-such-runtime/)
    await expect(source.run(['-L'], 1000)).rejects.toThrow(/no sampler container runs/)
    await expect.poll(containers, { timeout: 10_000 }).toBe(0)
  }, 60_000)
})
