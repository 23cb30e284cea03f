import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { readProcStatSync } from '../../src/runtime/process/process-group.js'
import { killWorkloadsOf } from './chaos-rig.js'

describe('killWorkloadsOf', () => {
  const dirs: string[] = []
  const children: ChildProcess[] = []
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL')
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  /** A detached process group, as the process driver starts a workload, and a data directory recording it. */
  function recordedGroup(recordedTicks: (actual: number) => number) {
    const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' })
    children.push(child)
    const ticks = readProcStatSync(child.pid!)!.starttime
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-chaos-rig-'))
    dirs.push(dataDir)
    const state = path.join(dataDir, 'runtime', 'process', 'w1')
    mkdirSync(state, { recursive: true })
    writeFileSync(
      path.join(state, 'state.json'),
      JSON.stringify({ pgid: child.pid, processStartTicks: recordedTicks(ticks) }),
    )
    const exited = new Promise((resolve) => child.once('exit', resolve))
    return { child, dataDir, exited }
  }

  it('kills a recorded group whose leader is the process that was started', async () => {
    const { dataDir, exited } = recordedGroup((ticks) => ticks)
    killWorkloadsOf(dataDir)
    await exited
  })

  it("leaves alone a group that took a dead workload's number (another start time)", async () => {
    const { child, dataDir } = recordedGroup((ticks) => ticks - 1)
    killWorkloadsOf(dataDir)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(child.exitCode).toBeNull()
    expect(child.signalCode).toBeNull()
  })
})
