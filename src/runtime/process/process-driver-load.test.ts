import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { groupMembers } from './process-group.js'
import { parseProcStat } from './proc-stat.js'
import {
  driver,
  makeSpec,
  root,
  stateJson,
  useProcessDriverRoot,
  waitFor,
} from '../../../test/support/process-driver-fixtures.js'

/**
 * The process driver under load: many workloads ending, stopping (with their jobs in process
 * groups of their own) and logging at once, and a workload that floods its log within the
 * budget. One workload at a time: process-driver.test.ts.
 */

useProcessDriverRoot()

describe('ProcessDriver with many workloads', () => {
  it('says when a workload ends: its own child at once, an adopted one within a poll', async () => {
    const d = driver()
    const ended: string[] = []
    d.watch((id) => ended.push(id))
    const own = makeSpec({ command: 'sleep 0.2; exit 3' })
    await d.start(own)
    await waitFor('its end to be told', () => (ended.includes(own.id) ? true : undefined))
    expect(await d.inspect(own.id)).toMatchObject({ phase: 'exited', exitCode: 3 })

    const adopted = makeSpec({ command: 'while [ ! -f go ]; do sleep 0.05; done; exit 4' })
    await d.start(adopted)
    await d.close()
    const successor = driver()
    const told: string[] = []
    successor.watch((id) => told.push(id))
    expect((await successor.inspect(adopted.id))?.phase).toBe('running')
    writeFileSync(path.join(adopted.containerDiskPath, 'go'), '')
    await waitFor('the adopted end to be told', () => (told.length > 0 ? true : undefined))
    expect(told).toEqual([adopted.id])
    expect(await successor.inspect(adopted.id)).toMatchObject({ phase: 'exited', exitCode: 4 })
  })

  it('stops many workloads at once, every process of every group, sharing its reads of /proc', async () => {
    const d = driver()
    const specs = Array.from({ length: 24 }, () =>
      makeSpec({ command: 'sleep 300 & sleep 300 & wait' }),
    )
    await Promise.all(specs.map((spec) => d.start(spec)))
    const groups = specs.map((spec) => ({
      pgid: Number(stateJson(spec.id).pgid),
      leaderStartTicks: Number(stateJson(spec.id).processStartTicks),
    }))
    for (const group of groups) {
      await waitFor('both sleeps', async () =>
        (await groupMembers(group)).length >= 3 ? true : undefined,
      )
    }
    const reads = d.processTableReads
    await Promise.all(specs.map((spec) => d.stop(spec.id, { graceMs: 5000 })))
    // Nothing runs (zombies an init has not reaped yet are not running).
    for (const group of groups) expect(await groupMembers(group)).toEqual([])
    // One read for each stop would be 24 (the stops before this change scanned /proc every 25 ms).
    expect(d.processTableReads - reads).toBeLessThan(specs.length / 4)
  })

  it('stops the jobs a shell with job control moved to process groups of their own', async () => {
    const d = driver()
    const token = String(300_000 + Math.floor(Math.random() * 100_000))
    const spec = makeSpec({ command: `exec bash -c 'set -m; sleep ${token} & wait'` })
    await d.start(spec)
    const pgid = Number(stateJson(spec.id).pgid)
    const job = await waitFor('the job', () =>
      readdirSync('/proc')
        .filter((name) => /^\d+$/.test(name))
        .map((name) => {
          try {
            const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0')
            if (cmdline[0] !== 'sleep' || cmdline[1] !== token) return undefined
            return parseProcStat(readFileSync(`/proc/${name}/stat`, 'utf8'))
          } catch {
            return undefined
          }
        })
        .find((stat) => stat !== undefined),
    )
    expect(job.pgrp).not.toBe(pgid)
    expect(job.session).toBe(pgid)
    await d.stop(spec.id, { graceMs: 5000 })
    // Gone, or a zombie its new parent (init) has not reaped yet: not running either way.
    let after: ReturnType<typeof parseProcStat>
    try {
      after = parseProcStat(readFileSync(`/proc/${job.pid}/stat`, 'utf8'))
    } catch {
      after = undefined
    }
    expect(after === undefined || after.starttime !== job.starttime || after.state === 'Z').toBe(
      true,
    )
  })

  it('copies output into the log as it is written, without being asked', async () => {
    const d = driver()
    const spec = makeSpec({ command: 'sleep 0.3; echo late; exec sleep 300' })
    await d.start(spec)
    const log = path.join(root, 'state', spec.id, 'logs.jsonl')
    await waitFor('the late line in logs.jsonl', () =>
      existsSync(log) && readFileSync(log, 'utf8').includes('"late"') ? true : undefined,
    )
  })
})

describe('ProcessDriver logs within a budget', () => {
  const budget = 64 * 1024
  const logBytes = (id: string) =>
    readdirSync(path.join(root, 'state', id))
      .filter((name) => /^(output|logs)/.test(name))
      .reduce((sum, name) => sum + statSync(path.join(root, 'state', id, name)).size, 0)

  it('keeps a flooding workload within its budget while a follower goes on across rotations', async () => {
    const d = driver({ logMaxBytes: budget })
    const spec = makeSpec({
      // The flood's own last lines can be lost (output.log emptied in the instant they are
      // written, as copytruncate would: docs/runtime.md, "Logs"): a line a second later is not.
      command:
        'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); echo "line-$i"; done; sleep 1; echo flood-done; exec sleep 300',
    })
    await d.start(spec)
    const seqs: number[] = []
    const lines: string[] = []
    const abort = new AbortController()
    for await (const line of d.followLogs(spec.id, 0, abort.signal)) {
      seqs.push(line.seq)
      lines.push(line.line)
      if (line.line === 'flood-done') break
    }
    abort.abort()
    // Each line once, in order; the follower may have been left behind (lines gone), never
    // sent back.
    expect(seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!)).toBe(true)
    // 20 000 lines of about 60 bytes of log each would be 1.2 MB: the budget is 64 KiB.
    expect(logBytes(spec.id)).toBeLessThanOrEqual(budget)
    expect(lines.filter((line) => line.startsWith('line-')).length).toBeGreaterThan(0)
    const tail = await d.readLogs(spec.id, { tail: 1 })
    expect(tail.map((l) => l.line)).toEqual(['flood-done'])
  })
})
