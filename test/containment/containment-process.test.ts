import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { PIDS_PER_VCPU } from '../../src/runtime/workload-limits.js'
import { probeTestCgroups } from '../support/cgroup-probe.js'
import { forkBomb, MEMORY_HOG } from '../support/hostile-workloads.js'
import { json, podLog } from '../support/http.js'
import { fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import {
  otherAccountKey,
  startTestPlatform,
  type CallInit,
  type TestPlatform,
} from '../support/platform.js'
import { untilFound } from '../support/until.js'

/**
 * Tenant containment on the process driver (docs/security.md, "Containment"): a second,
 * ordinary account's pods, sandboxed by bubblewrap, get the memory, vCPUs and processes they
 * rented as a cgroup's limits (v1 on a hybrid host like this one, v2 where the unified
 * hierarchy has the controllers); a memory hog is told the limit killed it, a fork bomb stops at
 * its bound while the platform answers, and the cgroup is gone once the pod is.
 */
const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})
const cgroups = await probeTestCgroups()
const runnable = bubblewrap.ok && cgroups.ok
if (!runnable) {
  console.log(
    `containment-process: left out: ${bubblewrap.ok ? '' : bubblewrap.reason} ${cgroups.ok ? '' : cgroups.reason}`,
  )
}

const HOST = 'sim-process-1'
/** Two GPUs on 2 vCPUs and 2 GB, run by the process driver: a one-GPU pod rents 1 vCPU and 1 GB. */
const FLEET = fleetYaml({
  hosts: [gpuHost(HOST, 'NVIDIA L4', 2, { vcpus: 2, memoryGb: 2, driver: 'process' })],
})

const FORK_BOMB = forkBomb({ quiet: true })

interface PodJson {
  id: string
  status: string
  statusReason: string | null
}

/** The cgroup directories a pod's processes are in (v1: one per hierarchy; v2: one). */
function cgroupDirsOfPid(pid: number): Map<string, string> {
  const dirs = new Map<string, string>()
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
    const match = /^\d+:([^:]*):(\/.*podyard-.*)$/.exec(line)
    if (!match) continue
    const controller = match[1] === '' ? 'unified' : match[1]!
    const mount = controller === 'unified' ? '/sys/fs/cgroup' : `/sys/fs/cgroup/${controller}`
    dirs.set(controller, `${mount}${match[2]}`)
  }
  return dirs
}

/** The pid of the pod's workload (its process group's leader), from the process driver's state. */
function workloadPid(dataDir: string, podId: string): number {
  const stateRoot = path.join(dataDir, 'runtime', 'process')
  for (const id of readdirSync(stateRoot)) {
    const file = path.join(stateRoot, id, 'state.json')
    if (!existsSync(file)) continue
    const text = readFileSync(file, 'utf8')
    if (text.includes(podId)) return Number(JSON.parse(text).pid)
  }
  throw new Error(`no workload of ${podId} under ${stateRoot}`)
}

/**
 * Set where the cgroup version is known (test/support/cgroup-v2-vm.sh sets 2): then this suite
 * must run, on that version, instead of being left out.
 */
const EXPECTED_CGROUP_VERSION = process.env.PODYARD_TEST_CGROUP_VERSION

describe.runIf(EXPECTED_CGROUP_VERSION !== undefined)('the cgroup version this run is for', () => {
  it(`is what workloads get here: cgroup v${EXPECTED_CGROUP_VERSION}, with bubblewrap`, () => {
    expect(bubblewrap.ok ? 'bubblewrap usable' : bubblewrap.reason).toBe('bubblewrap usable')
    expect(cgroups.ok ? cgroups.layout.version : cgroups.reason).toBe(
      Number(EXPECTED_CGROUP_VERSION),
    )
  })
})

describe.runIf(runnable)('containment on the process driver (bubblewrap, cgroups)', () => {
  let platform: TestPlatform
  let member: (p: string, init?: CallInit) => Promise<Response>
  let dataDir: string

  beforeAll(async () => {
    platform = await startTestPlatform({ sandbox: 'bubblewrap' }, { fleetYaml: FLEET })
    dataDir = platform.config.dataDir
    const key = await otherAccountKey(platform, 'member-process@example.com')
    member = (p, init = {}) => platform.call(p, { ...init, key })
  }, 120_000)

  afterAll(async () => {
    await platform?.close()
  }, 60_000)

  it("holds a member's fork bomb at its processes bound while the platform answers; its CPU quota is its vCPU; its cgroup goes with it", async () => {
    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: {
          name: 'bomb',
          image: 'ubuntu',
          gpu: { id: 'NVIDIA L4', count: 1 },
          args: FORK_BOMB,
        },
      }),
      201,
    )
    let ready = true
    let slowest = 0
    const readyz = (async () => {
      while (ready) {
        const asked = performance.now()
        const answer = await fetch(`${platform.url}/readyz`)
        if (answer.status !== 200) throw new Error(`/readyz answered ${answer.status}`)
        slowest = Math.max(slowest, performance.now() - asked)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })()
    let forked: number
    try {
      const line = await untilFound('the fork bomb to end', async () =>
        (await podLog(member, pod.id, 'container')).find((l) => l.startsWith('forked ')),
      )
      forked = Number(line.slice('forked '.length))
    } finally {
      ready = false
    }
    await readyz
    console.log(`containment-process: forked ${forked}; /readyz slowest ${slowest.toFixed(0)} ms`)
    // The launch's shells, bwrap and the pod's shell hold a few of the pids.
    expect(forked).toBeLessThan(PIDS_PER_VCPU)
    expect(forked).toBeGreaterThan(PIDS_PER_VCPU - 20)

    const dirs = cgroupDirsOfPid(workloadPid(dataDir, pod.id))
    expect(dirs.size).toBeGreaterThan(0)
    if (dirs.has('unified')) {
      const unified = dirs.get('unified')!
      expect(readFileSync(path.join(unified, 'cpu.max'), 'utf8').trim()).toBe('100000 100000')
      expect(readFileSync(path.join(unified, 'pids.max'), 'utf8').trim()).toBe(`${PIDS_PER_VCPU}`)
      expect(readFileSync(path.join(unified, 'memory.max'), 'utf8').trim()).toBe(`${1024 ** 3}`)
    } else {
      expect(readFileSync(path.join(dirs.get('cpu')!, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe(
        '100000',
      )
      expect(readFileSync(path.join(dirs.get('cpu')!, 'cpu.cfs_period_us'), 'utf8').trim()).toBe(
        '100000',
      )
      expect(readFileSync(path.join(dirs.get('pids')!, 'pids.max'), 'utf8').trim()).toBe(
        `${PIDS_PER_VCPU}`,
      )
      expect(
        readFileSync(path.join(dirs.get('memory')!, 'memory.limit_in_bytes'), 'utf8').trim(),
      ).toBe(`${1024 ** 3}`)
    }

    await member(`/v2/pods/${pod.id}`, { method: 'DELETE' })
    await untilFound('the pod terminated', async () => {
      const seen = await member(`/v2/pods/${pod.id}`)
      if (seen.status === 404) return true
      return (await json<PodJson>(seen)).status === 'TERMINATED' ? true : undefined
    })
    await untilFound('its cgroups removed', async () =>
      [...dirs.values()].every((d) => !existsSync(d)) ? true : undefined,
    )
  }, 120_000)

  it('tells a pod the memory limit killed it, and restarts it by its policy', async () => {
    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: {
          name: 'hog',
          image: 'ubuntu',
          gpu: { id: 'NVIDIA L4', count: 1 },
          args: MEMORY_HOG,
        },
      }),
      201,
    )
    const failed = await untilFound(
      'the hog to fail',
      async () => {
        const seen = await json<PodJson>(await member(`/v2/pods/${pod.id}`))
        return seen.status === 'ERROR' ? seen : undefined
      },
      120_000,
    )
    expect(failed.statusReason).toBe('out of memory: the pod used its 1 GB after 3 restarts')
    const system = await podLog(member, pod.id, 'system')
    for (let restart = 1; restart <= 3; restart++) {
      expect(system).toContain(
        `PROVISIONING: out of memory: the pod used its 1 GB; restart ${restart} of 3`,
      )
    }
    expect(await podLog(member, pod.id, 'container')).not.toContain('survived')
    await member(`/v2/pods/${pod.id}`, { method: 'DELETE' })
  }, 150_000)
})
