import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type {
  LogLine,
  RuntimeDriver,
  WorkloadSpec,
  WorkloadState,
} from '../../src/runtime/driver.js'
import { CONFORMANCE_IMAGES, HELLO_IMAGE_LINE, runtimeDrivers } from '../support/runtime-drivers.js'

/**
 * The behaviour every runtime driver must have, written against RuntimeDriver only, with real
 * processes. Workloads find their mounts through `${PODYARD_MOUNT_<PATH>:-<containerPath>}`:
 * drivers that mount at the container path need no variable, the unsandboxed process driver
 * sets it.
 *
 * The container disk is observed only through the workload (what its command writes, lists and
 * prints to its log), never on the host: a container's writable layer is no host directory.
 * Where the test must hand the workload a signal (`go`) or read a file it wrote, it uses a
 * `network` mount, which every driver binds from the host.
 */

/** The signal mount (signalMount() below) as the workload finds it. */
const SIGNAL = '"${PODYARD_MOUNT_SIGNAL:-/signal}"'

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== false) return value
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(25)
  }
}

/** Pids of live processes whose argv contains `args` in a row (host /proc: sees containers). */
function processesWith(args: readonly string[]): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let argv: string[]
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0')
    } catch {
      continue
    }
    const at = argv.findIndex((_, i) => args.every((a, j) => argv[i + j] === a))
    if (at >= 0) found.push(Number(name))
  }
  return found
}

/** A sleep duration no other process on the machine uses, to find the workload's sleeps. */
function uniqueSleep(): string {
  return String(100_000 + Math.floor(Math.random() * 800_000))
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      )
    })
  })
}

describe.each(runtimeDrivers())('runtime driver conformance: $name', (factory) => {
  let root: string
  let stateDir: string
  let driver: RuntimeDriver
  let drivers: RuntimeDriver[]
  let ids: string[]
  let counter = 0

  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'podyard-conformance-'))
    stateDir = path.join(root, 'state')
    drivers = []
    ids = []
    driver = open()
  })

  afterEach(async () => {
    // Closed first: two live drivers on one state directory would both copy the logs.
    for (const d of drivers) await d.close()
    const cleaner = factory.create(stateDir)
    for (const id of ids) {
      await cleaner.stop(id, { graceMs: 0 })
      await cleaner.remove(id)
    }
    await cleaner.close()
    rmSync(root, { recursive: true, force: true })
  })

  function open(): RuntimeDriver {
    const created = factory.create(stateDir)
    drivers.push(created)
    return created
  }

  function makeSpec(overrides: Partial<WorkloadSpec> = {}): WorkloadSpec {
    const id = overrides.id ?? `wl-${process.pid}-${++counter}`
    if (!ids.includes(id)) ids.push(id)
    return {
      id,
      image: CONFORMANCE_IMAGES.plain,
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

  function exited(target: RuntimeDriver, id: string): Promise<WorkloadState> {
    return waitFor(`${id} to exit`, async () => {
      const state = await target.inspect(id)
      return state?.phase === 'exited' ? state : undefined
    })
  }

  /** A host directory bound at /signal (kind `network`): the test and the workload share it. */
  function signalMount(id: string): WorkloadSpec['mounts'][number] {
    return { hostPath: path.join(root, 'signals', id), containerPath: '/signal', kind: 'network' }
  }

  function signalFile(spec: WorkloadSpec, name: string): string {
    const mount = spec.mounts.find((m) => m.containerPath === '/signal')
    if (!mount) throw new Error(`${spec.id} has no signal mount`)
    return path.join(mount.hostPath, name)
  }

  /**
   * The workloads print what they saw, then `ready`: the lines of the log after `begin` (when
   * given, the last such line: a run's own marker) up to the first `ready` after it.
   */
  function linesUntilReady(spec: WorkloadSpec, begin?: string): Promise<string[]> {
    return waitFor(`${spec.id} to be ready`, async () => {
      const lines = (await driver.readLogs(spec.id)).map((l) => l.line)
      const from = begin === undefined ? 0 : lines.lastIndexOf(begin) + 1
      if (begin !== undefined && from === 0) return undefined
      const end = lines.indexOf('ready', from)
      return end >= 0 ? lines.slice(from, end) : undefined
    })
  }

  function envOf(lines: string[]): Record<string, string> {
    return Object.fromEntries(
      lines
        .filter((line) => line.includes('='))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    )
  }

  function fileText(file: string): Promise<string> {
    return waitFor(file, () => (existsSync(file) ? readFileSync(file, 'utf8') : undefined))
  }

  describe('secrets', () => {
    it('never writes registry credentials anywhere, nor hands them to the workload', async () => {
      const password = `registry-password-${uniqueSleep()}`
      const id = `wl-${process.pid}-${++counter}`
      const spec = makeSpec({
        id,
        command: `env > ${SIGNAL}/env.txt; env; echo ready; exec sleep 300`,
        registryAuth: { username: 'registry-user', password },
        mounts: [signalMount(id)],
      })
      await driver.start(spec)
      const env = await linesUntilReady(spec)
      expect(env.length).toBeGreaterThan(0)
      expect(env.join('\n')).not.toContain(password)
      expect(readFileSync(signalFile(spec, 'env.txt'), 'utf8')).not.toContain(password)
      const files = (readdirSync(root, { recursive: true }) as string[])
        .map((name) => path.join(root, name))
        .filter((file) => {
          try {
            return readFileSync(file).length >= 0
          } catch {
            return false
          }
        })
      expect(files.length).toBeGreaterThan(0)
      for (const file of files) expect(readFileSync(file, 'utf8'), file).not.toContain(password)
    })
  })

  describe('start and inspect', () => {
    it('runs the command in a writable container disk, with its env, as running', async () => {
      const spec = makeSpec({
        command: 'env > env.tmp && mv env.tmp env.txt && cat env.txt; echo ready; exec sleep 300',
        env: { GREETING: 'hello world', RUNPOD_POD_ID: 'pod123' },
        labels: { kind: 'pod', owner: 'acct-1' },
      })
      const before = Date.now()
      const started = await driver.start(spec)
      expect(started).toMatchObject({ id: spec.id, phase: 'running', exitCode: null })
      expect(started.finishedAt).toBeNull()
      expect(started.labels).toEqual({ kind: 'pod', owner: 'acct-1' })
      expect(Date.parse(started.startedAt)).toBeGreaterThanOrEqual(before - 1000)

      // Written relative to its working directory and read back: the container disk.
      const env = envOf(await linesUntilReady(spec))
      expect(env.GREETING).toBe('hello world')
      expect(env.RUNPOD_POD_ID).toBe('pod123')

      const inspected = await driver.inspect(spec.id)
      expect(inspected).toEqual(started)
      expect(await driver.list()).toContainEqual(started)
      // Listed by labels: only the workloads whose spec carries each of them.
      expect(await driver.list({ labels: { kind: 'pod', owner: 'acct-1' } })).toContainEqual(
        started,
      )
      const ids = async (labels: Record<string, string>) =>
        (await driver.list({ labels })).map((s) => s.id)
      expect(await ids({ kind: 'worker' })).not.toContain(spec.id)
      expect(await ids({ kind: 'pod', owner: 'acct-2' })).not.toContain(spec.id)
      await expect(driver.start(spec)).rejects.toThrow()
    })

    // Process: simulated GPUs are named in the env. Docker: a device request, which only an
    // engine with the NVIDIA runtime accepts.
    if (factory.gpuSkipReason) {
      console.log(`conformance (${factory.name}): GPU case skipped: ${factory.gpuSkipReason}`)
    }
    it.skipIf(factory.gpuSkipReason !== undefined)(
      'hands the workload its GPU indices',
      async () => {
        const spec = makeSpec({ command: 'env; echo ready; exec sleep 300', gpuIndices: [0, 2] })
        await driver.start(spec)
        const env = envOf(await linesUntilReady(spec))
        expect(env.NVIDIA_VISIBLE_DEVICES).toBe('0,2')
      },
    )

    it('reports the exit code and finish time of a command that ends', async () => {
      const failing = makeSpec({ command: 'exit 3' })
      const succeeding = makeSpec({ command: 'true' })
      await driver.start(failing)
      await driver.start(succeeding)
      const three = await exited(driver, failing.id)
      const zero = await exited(driver, succeeding.id)
      expect(three.exitCode).toBe(3)
      expect(zero.exitCode).toBe(0)
      for (const state of [three, zero]) {
        expect(state.finishedAt).not.toBeNull()
        expect(Date.parse(state.finishedAt!)).toBeGreaterThanOrEqual(
          Date.parse(state.startedAt) - 1000,
        )
      }
      // Stopping what has ended changes nothing.
      await driver.stop(failing.id)
      expect(await driver.inspect(failing.id)).toEqual(three)
      await driver.stop('no-such-workload')
      expect(await driver.inspect('no-such-workload')).toBeUndefined()
    })
  })

  describe('stop', () => {
    it('terminates the whole process group, grandchildren included', async () => {
      const [a, b] = [uniqueSleep(), uniqueSleep()]
      const spec = makeSpec({ command: `sleep ${a} & sleep ${b}; wait` })
      await driver.start(spec)
      await waitFor(
        'both sleeps',
        () => processesWith(['sleep', a]).length > 0 && processesWith(['sleep', b]).length > 0,
      )

      const began = performance.now()
      await driver.stop(spec.id, { graceMs: 5000 })
      expect(performance.now() - began).toBeLessThan(4000)
      expect(processesWith(['sleep', a])).toEqual([])
      expect(processesWith(['sleep', b])).toEqual([])
      const state = await driver.inspect(spec.id)
      expect(state).toMatchObject({ phase: 'exited', exitCode: null })
      expect(state?.finishedAt).not.toBeNull()
    })

    it('kills what ignores SIGTERM once the grace period is over', async () => {
      const token = uniqueSleep()
      const spec = makeSpec({ command: `trap '' TERM; sleep ${token}; echo survived` })
      await driver.start(spec)
      await waitFor('the sleep', () => processesWith(['sleep', token]).length > 0)

      const began = performance.now()
      await driver.stop(spec.id, { graceMs: 300 })
      expect(performance.now() - began).toBeGreaterThanOrEqual(290)
      expect(processesWith(['sleep', token])).toEqual([])
      expect((await driver.inspect(spec.id))?.phase).toBe('exited')
      expect((await driver.readLogs(spec.id)).map((l) => l.line)).not.toContain('survived')
    })
  })

  it('starts again from an empty container disk, keeping what is on the mounts', async () => {
    const id = `wl-${process.pid}-${++counter}`
    const data = '"${PODYARD_MOUNT_DATA:-/data}"'
    const first = makeSpec({
      id,
      command:
        `echo run-1; echo scratch > scratch.txt; cat scratch.txt; echo kept > ${data}/kept.txt; ` +
        `echo shared > ${SIGNAL}/shared.txt; echo ready; exec sleep 300`,
      mounts: [
        {
          hostPath: path.join(root, 'volumes', 'data'),
          containerPath: '/data',
          kind: 'persistent',
        },
        signalMount(id),
      ],
    })
    await driver.start(first)
    expect(await linesUntilReady(first, 'run-1')).toEqual(['scratch'])
    // A network mount is the host directory itself.
    expect(readFileSync(signalFile(first, 'shared.txt'), 'utf8')).toBe('shared\n')
    await driver.stop(first.id, { graceMs: 2000 })

    const second = {
      ...first,
      command:
        'echo run-2; if [ -e scratch.txt ]; then echo scratch-present; else echo scratch-absent; fi; ' +
        `cat ${data}/kept.txt; cat ${SIGNAL}/shared.txt; echo ready; exec sleep 300`,
    }
    await driver.start(second)
    expect(await linesUntilReady(second, 'run-2')).toEqual(['scratch-absent', 'kept', 'shared'])
  })

  describe('logs', () => {
    it('keeps stdout and stderr lines in order, numbered, and answers tail and afterSeq', async () => {
      const spec = makeSpec({ command: 'echo one; echo two >&2; echo three; exec sleep 300' })
      const before = Date.now()
      await driver.start(spec)
      const lines = await waitFor('three lines', async () => {
        const read = await driver.readLogs(spec.id)
        return read.length >= 3 ? read : undefined
      })
      expect(lines.map((l) => l.line)).toEqual(['one', 'two', 'three'])
      expect(lines[0]!.seq).toBe(1)
      for (let i = 1; i < lines.length; i++)
        expect(lines[i]!.seq).toBeGreaterThan(lines[i - 1]!.seq)
      for (const line of lines) expect(Date.parse(line.ts)).toBeGreaterThanOrEqual(before - 1000)

      const tail = await driver.readLogs(spec.id, { tail: 2 })
      expect(tail.map((l) => l.line)).toEqual(['two', 'three'])
      const after = await driver.readLogs(spec.id, { afterSeq: lines[0]!.seq })
      expect(after.map((l) => l.line)).toEqual(['two', 'three'])
      const afterThenTail = await driver.readLogs(spec.id, { afterSeq: lines[0]!.seq, tail: 1 })
      expect(afterThenTail.map((l) => l.line)).toEqual(['three'])
      const future = new Date(Date.now() + 60_000).toISOString()
      expect(await driver.readLogs(spec.id, { since: future })).toEqual([])
      expect(await driver.readLogs(spec.id, { since: lines[0]!.ts })).toHaveLength(3)
    })

    it('follows new lines as they are written, until aborted', async () => {
      const id = `wl-${process.pid}-${++counter}`
      const spec = makeSpec({
        id,
        command: `echo before; while [ ! -f ${SIGNAL}/go ]; do sleep 0.05; done; echo after-1; echo after-2; exec sleep 300`,
        mounts: [signalMount(id)],
      })
      await driver.start(spec)
      const abort = new AbortController()
      const follow = driver.followLogs(spec.id, 0, abort.signal)[Symbol.asyncIterator]()
      const next = async (): Promise<LogLine | undefined> => {
        const result = await follow.next()
        return result.done ? undefined : result.value
      }
      expect((await next())?.line).toBe('before')
      writeFileSync(signalFile(spec, 'go'), '')
      const one = await next()
      const two = await next()
      expect([one?.line, two?.line]).toEqual(['after-1', 'after-2'])
      expect(two!.seq).toBeGreaterThan(one!.seq)

      abort.abort()
      const began = performance.now()
      expect((await follow.next()).done).toBe(true)
      expect(performance.now() - began).toBeLessThan(2000)
    })

    // Log streams resume after the Last-Event-ID they saw: a workload started again must not
    // number its new lines from 1, or a resuming client would skip them.
    it('numbers on across stop and start, also for a new driver, so that resuming misses nothing', async () => {
      const spec = makeSpec({ command: 'echo run-1-a; echo run-1-b; exec sleep 300' })
      await driver.start(spec)
      const first = await waitFor('run 1', async () => {
        const read = await driver.readLogs(spec.id)
        return read.length >= 2 ? read : undefined
      })
      const lastSeq = first.at(-1)!.seq
      await driver.stop(spec.id, { graceMs: 2000 })
      await driver.start({ ...spec, command: 'echo run-2-a; echo run-2-b; exec sleep 300' })

      const abort = new AbortController()
      const follow = driver.followLogs(spec.id, lastSeq, abort.signal)[Symbol.asyncIterator]()
      const one = (await follow.next()).value as LogLine
      const two = (await follow.next()).value as LogLine
      abort.abort()
      expect([one.line, two.line]).toEqual(['run-2-a', 'run-2-b'])
      expect(one.seq).toBeGreaterThan(lastSeq)
      expect(two.seq).toBeGreaterThan(one.seq)
      const resumed = await driver.readLogs(spec.id, { afterSeq: lastSeq })
      expect(resumed).toEqual([one, two])

      await driver.close()
      const successor = open()
      expect(await successor.readLogs(spec.id, { afterSeq: lastSeq })).toEqual(resumed)
      await successor.stop(spec.id, { graceMs: 2000 })
      await successor.start({ ...spec, command: 'echo run-3; exec sleep 300' })
      const third = await waitFor('run 3', async () => {
        const read = await successor.readLogs(spec.id, { afterSeq: two.seq })
        return read.length >= 1 ? read : undefined
      })
      expect(third.map((l) => l.line)).toEqual(['run-3'])
      expect(third[0]!.seq).toBeGreaterThan(two.seq)
    })

    it('ends following once an exited workload has delivered everything, last partial line included', async () => {
      const spec = makeSpec({ command: 'echo a; echo b; echo c; printf no-newline' })
      await driver.start(spec)
      await exited(driver, spec.id)
      const seen: LogLine[] = []
      for await (const line of driver.followLogs(spec.id, 1, new AbortController().signal)) {
        seen.push(line)
      }
      expect(seen.map((l) => l.line)).toEqual(['b', 'c', 'no-newline'])
      expect((await driver.readLogs(spec.id)).map((l) => l.line)).toEqual([
        'a',
        'b',
        'c',
        'no-newline',
      ])
    })
  })

  it('makes a port served on $RUNPOD_TCP_PORT_<private> reachable on its public port', async () => {
    const port = await freePort()
    const spec = makeSpec({
      command:
        "exec node -e \"require('http').createServer((q, s) => s.end('pong')).listen(Number(process.env.RUNPOD_TCP_PORT_8888))\"",
      ports: [{ private: 8888, protocol: 'http', public: port }],
    })
    await driver.start(spec)
    const body = await waitFor(
      'the HTTP server',
      async () => {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/`)
          return await response.text()
        } catch {
          return undefined
        }
      },
      15_000,
    )
    expect(body).toBe('pong')
  })

  it('measures CPU and memory use relative to the allotment', async () => {
    const busy = makeSpec({ command: 'while :; do :; done', vcpus: 1, memoryGb: 1 })
    await driver.start(busy)
    // On a loaded machine the first measurement may cover little more than the sandbox's own
    // start (no tick of the loop yet): measure until the loop has had the CPU.
    const stats = await waitFor(
      'a measurement of the busy loop',
      async () => {
        const measured = await driver.stats(busy.id)
        return measured && measured.cpuPercent > 0 ? measured : undefined
      },
      15_000,
    )
    expect(stats).toBeDefined()
    expect(stats!.cpuPercent).toBeGreaterThan(0)
    expect(stats!.cpuPercent).toBeLessThanOrEqual(100)
    expect(stats!.memoryPercent).toBeGreaterThanOrEqual(0)
    expect(stats!.memoryPercent).toBeLessThanOrEqual(100)
    expect(Number.isInteger(stats!.cpuPercent) && Number.isInteger(stats!.memoryPercent)).toBe(true)

    await driver.stop(busy.id, { graceMs: 1000 })
    expect(await driver.stats(busy.id)).toBeUndefined()
    expect(await driver.stats('no-such-workload')).toBeUndefined()
  })

  describe('adoption by a new driver', () => {
    it('sees a workload started by a closed driver as running, with its logs, and stops it', async () => {
      const id = `wl-${process.pid}-${++counter}`
      const spec = makeSpec({
        id,
        command: `echo from-a; while [ ! -f ${SIGNAL}/go ]; do sleep 0.05; done; echo from-b; exec sleep 300`,
        mounts: [signalMount(id)],
      })
      const started = await driver.start(spec)
      await waitFor('from-a', async () => (await driver.readLogs(spec.id)).length > 0)
      await driver.close()

      writeFileSync(signalFile(spec, 'go'), '')
      const successor = open()
      const listed = await successor.list()
      expect(listed.find((s) => s.id === spec.id)).toEqual(started)
      expect(await successor.inspect(spec.id)).toEqual(started)
      const lines = await waitFor('from-b', async () => {
        const read = await successor.readLogs(spec.id)
        return read.length >= 2 ? read : undefined
      })
      expect(lines.map((l) => [l.seq, l.line])).toEqual([
        [1, 'from-a'],
        [2, 'from-b'],
      ])

      await successor.stop(spec.id, { graceMs: 2000 })
      expect((await successor.inspect(spec.id))?.phase).toBe('exited')
    })

    it('reports the exit code of a workload that ended while no driver watched', async () => {
      const id = `wl-${process.pid}-${++counter}`
      const spec = makeSpec({
        id,
        command: `while [ ! -f ${SIGNAL}/go ]; do sleep 0.05; done; touch ${SIGNAL}/done; exit 7`,
        mounts: [signalMount(id)],
      })
      const started = await driver.start(spec)
      await driver.close()
      writeFileSync(signalFile(spec, 'go'), '')
      await fileText(signalFile(spec, 'done'))
      await sleep(100)

      const successor = open()
      const state = await exited(successor, spec.id)
      expect(state).toMatchObject({ phase: 'exited', exitCode: 7, startedAt: started.startedAt })
      expect(state.finishedAt).not.toBeNull()
    })
  })

  describe('default commands', () => {
    it('runs the idle process when there is no command and the image has none', async () => {
      const spec = makeSpec({ command: null, image: CONFORMANCE_IMAGES.plain })
      await driver.start(spec)
      await sleep(300)
      expect((await driver.inspect(spec.id))?.phase).toBe('running')
      const began = performance.now()
      await driver.stop(spec.id, { graceMs: 5000 })
      // The idle process ends on SIGTERM, it does not wait for the SIGKILL.
      expect(performance.now() - began).toBeLessThan(4000)
    })

    it("runs the image's own command when there is no command", async () => {
      const spec = makeSpec({ command: null, image: CONFORMANCE_IMAGES.hello })
      await driver.start(spec)
      const lines = await waitFor('the image line', async () => {
        const read = await driver.readLogs(spec.id)
        return read.length > 0 ? read : undefined
      })
      expect(lines.map((l) => l.line)).toEqual([HELLO_IMAGE_LINE])
      expect((await driver.inspect(spec.id))?.phase).toBe('running')
    })
  })

  it('remove forgets the workload, its logs and its container disk', async () => {
    const spec = makeSpec({
      command: 'echo bye; echo data > file.txt; echo ready; exec sleep 300',
    })
    await driver.start(spec)
    await linesUntilReady(spec)
    await driver.remove(spec.id)
    expect(await driver.inspect(spec.id)).toBeUndefined()
    expect((await driver.list()).map((s) => s.id)).not.toContain(spec.id)
    expect(await driver.readLogs(spec.id)).toEqual([])
    expect(existsSync(spec.containerDiskPath)).toBe(false)
    await driver.remove(spec.id)
    await driver.remove('no-such-workload')
  })
})
