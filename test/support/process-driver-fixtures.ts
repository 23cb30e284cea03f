import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach } from 'vitest'
import type { WorkloadSpec } from '../../src/runtime/driver.js'
import {
  ProcessDriver,
  type ProcessDriverOptions,
} from '../../src/runtime/process/process-driver.js'

/**
 * What the process driver's tests (src/runtime/process/process-driver*.test.ts) share: a fresh
 * state directory for each test, drivers on it that are closed after it (their workloads
 * stopped), workload specs with their disks in it, and reads of what the driver wrote there.
 */

/** The directory of the running test (a live binding: each test has its own). */
export let root: string
let drivers: ProcessDriver[]
let counter = 0

/** Gives each test of the calling file its own `root`, and stops what it started after it. */
export function useProcessDriverRoot(): void {
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'podyard-process-driver-'))
    drivers = []
  })

  afterEach(async () => {
    for (const d of drivers) await d.close()
    const cleaner = new ProcessDriver({ stateDir: path.join(root, 'state'), sandbox: 'none' })
    for (const state of await cleaner.list()) {
      await cleaner.stop(state.id, { graceMs: 0 })
    }
    await cleaner.close()
    rmSync(root, { recursive: true, force: true })
  })
}

export function driver(options: Partial<ProcessDriverOptions> = {}): ProcessDriver {
  const created = new ProcessDriver({
    stateDir: path.join(root, 'state'),
    sandbox: 'none',
    logPollMs: 25,
    ...options,
  })
  drivers.push(created)
  return created
}

export function makeSpec(overrides: Partial<WorkloadSpec> = {}): WorkloadSpec {
  const id = overrides.id ?? `p${++counter}`
  return {
    id,
    image: 'none',
    command: 'exec sleep 300',
    env: {},
    containerDiskPath: path.join(root, 'disks', id),
    diskGb: 1,
    mounts: [],
    ports: [],
    gpuIndices: [],
    vcpus: 1,
    memoryGb: 1,
    labels: {},
    ...overrides,
  }
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = performance.now() + 10_000
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

export function fileText(file: string): Promise<string> {
  return waitFor(file, () => (existsSync(file) ? readFileSync(file, 'utf8') : undefined))
}

export function stateJson(id: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(root, 'state', id, 'state.json'), 'utf8')) as Record<
    string,
    unknown
  >
}

export function envOf(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  )
}
