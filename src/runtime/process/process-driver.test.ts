import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../shared/clock.js'
import { groupMembers } from './process-group.js'
import { MAX_LOG_LINE_BYTES } from './log-lines.js'
import { parseProcStat } from './proc-stat.js'
import {
  driver,
  envOf,
  fileText,
  makeSpec,
  root,
  stateJson,
  useProcessDriverRoot,
  waitFor,
} from '../../../test/support/process-driver-fixtures.js'

/**
 * What is particular to the process driver; what every driver does is in
 * test/runtime/runtime-conformance.test.ts. Here: a workload without a sandbox, its state on
 * disk, adoption by the next server, its logs, and what its stop leaves. In bubblewrap:
 * process-driver-bubblewrap.test.ts; many workloads at once and a flooding one:
 * process-driver-load.test.ts.
 */

useProcessDriverRoot()

describe('ProcessDriver', () => {
  it('records the group leader with its start ticks, and uses the injected clock', async () => {
    const clock = new ManualClock('2030-05-01T12:00:00.000Z')
    const d = driver({ clock })
    const spec = makeSpec({ command: 'echo hi; exec sleep 300' })
    const state = await d.start(spec)
    expect(state.startedAt).toBe('2030-05-01T12:00:00.000Z')
    const saved = stateJson(spec.id)
    expect(saved.pgid).toBe(saved.pid)
    const leader = parseProcStat(readFileSync(`/proc/${String(saved.pid)}/stat`, 'utf8'))
    expect(saved.processStartTicks).toBe(leader?.starttime)
    const { env: _env, ...persisted } = spec
    expect(saved).toMatchObject({ spec: persisted, sandbox: 'none', startedAt: state.startedAt })
    expect(saved.bootId).toBe(readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim())
    const lines = await waitFor('hi', async () => {
      const read = await d.readLogs(spec.id)
      return read.length > 0 ? read : undefined
    })
    expect(lines).toEqual([{ seq: 1, ts: '2030-05-01T12:00:00.000Z', line: 'hi' }])
  })

  it('never writes the environment (worker keys) or registry credentials to disk', async () => {
    const d = driver()
    const spec = makeSpec({
      command: 'echo "key=$RUNPOD_AI_API_KEY" > seen.txt; exec sleep 300',
      env: { RUNPOD_AI_API_KEY: 'wk_secret-worker-key-0123' },
      registryAuth: { username: 'u', password: 'registry-password-0123' },
    })
    await d.start(spec)
    expect(await fileText(path.join(spec.containerDiskPath, 'seen.txt'))).toBe(
      'key=wk_secret-worker-key-0123\n',
    )
    await d.stop(spec.id, { graceMs: 0 })
    const dir = path.join(root, 'state', spec.id)
    for (const name of readdirSync(dir)) {
      const text = readFileSync(path.join(dir, name), 'utf8')
      expect(text, name).not.toContain('wk_secret-worker-key-0123')
      expect(text, name).not.toContain('registry-password-0123')
    }
    // A state.json written by an older version, with the environment, is written again without.
    const file = path.join(dir, 'state.json')
    const saved = stateJson(spec.id)
    writeFileSync(
      file,
      JSON.stringify({ ...saved, spec: { ...(saved.spec as object), env: spec.env } }),
    )
    expect((await driver().inspect(spec.id))?.phase).toBe('exited')
    expect(readFileSync(file, 'utf8')).not.toContain('wk_secret-worker-key-0123')
  })

  it('leaves workloads running when the server process exits, for the next one to adopt', async () => {
    const spec = makeSpec({
      command: 'echo started; while [ ! -f go ]; do sleep 0.05; done; echo resumed; exit 5',
    })
    // A separate server process that starts the workload and exits at once.
    const script = [
      `import { ProcessDriver } from ${JSON.stringify(path.resolve(import.meta.dirname, 'process-driver.ts'))}`,
      `const d = new ProcessDriver({ stateDir: ${JSON.stringify(path.join(root, 'state'))}, sandbox: 'none' })`,
      `await d.start(${JSON.stringify(spec)})`,
      'await d.close()',
    ].join('\n')
    const server = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        cwd: path.resolve(import.meta.dirname, '../../..'),
        encoding: 'utf8',
        timeout: 20_000,
      },
    )
    expect(server.stderr).toBe('')
    expect(server.status).toBe(0)

    const d = driver()
    expect((await d.inspect(spec.id))?.phase).toBe('running')
    writeFileSync(path.join(spec.containerDiskPath, 'go'), '')
    const state = await waitFor('the exit', async () => {
      const s = await d.inspect(spec.id)
      return s?.phase === 'exited' ? s : undefined
    })
    expect(state.exitCode).toBe(5)
    expect((await d.readLogs(spec.id)).map((l) => l.line)).toEqual(['started', 'resumed'])
  })

  /**
   * Moves the processes of a workload's cgroups (where the server is root) to their parents:
   * a process that re-uses a workload's pid is not in the workload's cgroup, which is emptied
   * (its processes killed) when the workload is found ended.
   */
  const leaveWorkloadCgroups = async (pid: number) => {
    if (process.getuid?.() !== 0) return
    // Its first process joins them before it execs the command.
    const cgroups = await waitFor('the workload in its cgroups', async () => {
      const text = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      const joining = readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('cgroup.procs')
      return text.includes('/podyard-') && !joining ? text : undefined
    })
    for (const line of cgroups.split('\n')) {
      const match = /^\d+:([^:]*):(.*\/podyard-[^/]+)\/[^/]+$/.exec(line)
      if (!match) continue
      const mount =
        match[1] === '' ? '/sys/fs/cgroup' : `/sys/fs/cgroup/${match[1]!.replace(/^name=/, '')}`
      const inner = readFileSync(
        `${mount}${match[2]}/${line.split('/').pop()}/cgroup.procs`,
        'utf8',
      )
      for (const member of inner.split('\n').filter((m) => m !== '')) {
        writeFileSync(`${mount}${path.posix.dirname(match[2]!)}/cgroup.procs`, member)
      }
    }
  }

  it('does not take a process that re-uses the pid for the workload', async () => {
    const d = driver()
    const spec = makeSpec()
    await d.start(spec)
    await d.close()
    const saved = stateJson(spec.id)
    await leaveWorkloadCgroups(Number(saved.pid))
    const file = path.join(root, 'state', spec.id, 'state.json')
    writeFileSync(
      file,
      JSON.stringify({ ...saved, processStartTicks: Number(saved.processStartTicks) + 1 }),
    )
    try {
      const successor = driver()
      expect(await successor.inspect(spec.id)).toMatchObject({ phase: 'exited', exitCode: null })
      // Not ours: stop must not signal it.
      await successor.stop(spec.id, { graceMs: 0 })
      expect(existsSync(`/proc/${String(saved.pid)}`)).toBe(true)
    } finally {
      process.kill(-Number(saved.pgid), 'SIGKILL')
    }
  })

  it('runs `exec sleep infinity` when there is nothing else to run, or the configured idle command', async () => {
    const d = driver()
    const spec = makeSpec({ command: null })
    await d.start(spec)
    const pgid = Number(stateJson(spec.id).pgid)
    const commands = await waitFor('the idle sleep', async () => {
      const members = await groupMembers({
        pgid,
        leaderStartTicks: Number(stateJson(spec.id).processStartTicks),
      })
      const argvs = members.map((m) =>
        readFileSync(`/proc/${m.pid}/cmdline`, 'utf8').split('\0').join(' ').trim(),
      )
      return argvs.includes('sleep infinity') ? argvs : undefined
    })
    expect(commands).toContain('sleep infinity')

    const custom = driver({ idleCommand: 'echo idling; exec sleep 300' })
    const other = makeSpec({ command: null })
    await custom.start(other)
    await waitFor('idling', async () =>
      (await custom.readLogs(other.id)).length > 0 ? true : undefined,
    )
  })

  it('tells an unsandboxed workload where its disks are, and which ports to bind', async () => {
    const d = driver()
    const volume = path.join(root, 'volumes', 'v1')
    const spec = makeSpec({
      command: 'env > env.txt; touch ready; exec sleep 300',
      mounts: [{ hostPath: volume, containerPath: '/workspace', kind: 'persistent' }],
      ports: [{ private: 8888, protocol: 'http', public: 41234 }],
    })
    await d.start(spec)
    await fileText(path.join(spec.containerDiskPath, 'ready'))
    const env = envOf(readFileSync(path.join(spec.containerDiskPath, 'env.txt'), 'utf8'))
    expect(env).toMatchObject({
      HOME: spec.containerDiskPath,
      PODYARD_CONTAINER_DISK: spec.containerDiskPath,
      PODYARD_MOUNT_WORKSPACE: volume,
      RUNPOD_TCP_PORT_8888: '41234',
      PATH: process.env.PATH,
    })
    expect(env.CUDA_VISIBLE_DEVICES).toBeUndefined()
    expect(existsSync(volume)).toBe(true)
  })

  it('continues the log of a workload across its runs, and splits over-long lines', async () => {
    const d = driver()
    const spec = makeSpec({ command: 'echo run-1; printf unterminated' })
    await d.start(spec)
    await waitFor('run 1 to end', async () =>
      (await d.inspect(spec.id))?.phase === 'exited' ? true : undefined,
    )
    await d.start({
      ...spec,
      command: `echo run-2; head -c ${MAX_LOG_LINE_BYTES + 5} /dev/zero | tr '\\0' x; echo`,
    })
    await waitFor('run 2 to end', async () =>
      (await d.inspect(spec.id))?.phase === 'exited' ? true : undefined,
    )
    const lines = await d.readLogs(spec.id)
    expect(lines.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5])
    expect(lines.slice(0, 3).map((l) => l.line)).toEqual(['run-1', 'unterminated', 'run-2'])
    expect(lines.slice(3).map((l) => l.line.length)).toEqual([MAX_LOG_LINE_BYTES, 5])
  })

  it('shares a state directory with inactive drivers (other replicas) without double logs', async () => {
    const leader = driver()
    const follower = driver()
    follower.setActive(false)
    const spec = makeSpec({ command: 'for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.05; done' })
    await leader.start(spec)
    // The follower reads while the leader pumps: it must not append the same lines again.
    await waitFor('the follower to see it end', async () => {
      await follower.readLogs(spec.id)
      return (await follower.inspect(spec.id))?.phase === 'exited' ? true : undefined
    })
    await waitFor('all lines', async () =>
      (await leader.readLogs(spec.id)).length === 6 ? true : undefined,
    )
    const lines = await follower.readLogs(spec.id)
    expect(lines.map((l) => l.line)).toEqual([1, 2, 3, 4, 5, 6].map((i) => `line-${i}`))
    expect(lines.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6])

    // The leader starts it again: the follower sees the new run, not what it read before.
    await leader.start({ ...spec, command: 'exec sleep 300' })
    expect((await follower.inspect(spec.id))?.phase).toBe('running')
    // The follower takes over (the leader died): it adopts the workload and stops it.
    leader.setActive(false)
    follower.setActive(true)
    await follower.stop(spec.id, { graceMs: 0 })
    expect((await leader.inspect(spec.id))?.phase).toBe('exited')
  })

  it('stops what an exited workload left running in its group', async () => {
    const d = driver()
    const token = String(200_000 + Math.floor(Math.random() * 100_000))
    const spec = makeSpec({ command: `sleep ${token} & exit 0` })
    await d.start(spec)
    const state = await waitFor('the leader to exit', async () => {
      const s = await d.inspect(spec.id)
      return s?.phase === 'exited' ? s : undefined
    })
    expect(state.exitCode).toBe(0)
    const pgid = Number(stateJson(spec.id).pgid)
    const leaderStartTicks = Number(stateJson(spec.id).processStartTicks)
    if (process.getuid?.() === 0) {
      // In its cgroup (the server is root): killed with it once the leader's end is seen.
      await waitFor('the leftover killed with its cgroup', async () =>
        (await groupMembers({ pgid, leaderStartTicks })).length === 0 ? true : undefined,
      )
    } else {
      expect((await groupMembers({ pgid, leaderStartTicks })).length).toBeGreaterThan(0)
    }
    await d.stop(spec.id, { graceMs: 1000 })
    expect(await groupMembers({ pgid, leaderStartTicks })).toEqual([])
  })

  // The shape a sandbox stopped as it starts leaves (bwrap's outer process dead of SIGTERM,
  // its PID-namespace init orphaned before it started the command): `unshare --fork` dies of
  // SIGTERM and leaves its child, the init of a namespace of its own, which ignores SIGTERM.
  it.runIf(process.getuid?.() === 0)(
    'stops a PID-namespace init left without its parent, which ignores SIGTERM, without its grace',
    async () => {
      const d = driver()
      const spec = makeSpec({ command: 'exec unshare --pid --fork sleep 300' })
      await d.start(spec)
      const group = {
        pgid: Number(stateJson(spec.id).pgid),
        leaderStartTicks: Number(stateJson(spec.id).processStartTicks),
      }
      await waitFor('the namespace init to start', async () =>
        (await groupMembers(group)).some((m) => m.comm === 'sleep') ? true : undefined,
      )
      // A grace longer than the test's timeout: the stop must not wait it out.
      await d.stop(spec.id, { graceMs: 600_000 })
      expect(await groupMembers(group)).toEqual([])
    },
  )

  it('ends followers when it closes, and leaves the workload running', async () => {
    const d = driver()
    const spec = makeSpec()
    await d.start(spec)
    const follow = d.followLogs(spec.id, 0, new AbortController().signal)[Symbol.asyncIterator]()
    const pending = follow.next()
    await sleep(50)
    await d.close()
    expect((await pending).done).toBe(true)
    expect((await d.inspect(spec.id))?.phase).toBe('running')
    expect((await driver().inspect(spec.id))?.phase).toBe('running')
  })

  it('refuses ids and container disks that could reach outside their place', async () => {
    const d = driver()
    await expect(d.start(makeSpec({ id: '../escape' }))).rejects.toThrow(/invalid workload id/)
    await expect(d.start(makeSpec({ containerDiskPath: '/' }))).rejects.toThrow(/container disk/)
    await expect(d.start(makeSpec({ containerDiskPath: root }))).rejects.toThrow(/container disk/)
    await expect(d.start(makeSpec({ containerDiskPath: 'relative' }))).rejects.toThrow(
      /container disk/,
    )
    const disk = path.join(root, 'disks', 'd1')
    const inside = { hostPath: path.join(disk, 'vol'), containerPath: '/workspace' } as const
    await expect(
      d.start(makeSpec({ containerDiskPath: disk, mounts: [{ ...inside, kind: 'persistent' }] })),
    ).rejects.toThrow(/inside the container disk/)
  })
})
