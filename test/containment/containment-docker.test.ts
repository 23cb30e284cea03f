import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Docker from 'dockerode'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform } from '../../src/platform.js'
import { PIDS_PER_VCPU } from '../../src/runtime/docker/container-spec.js'
import { runCli } from '../support/cli.js'
import { forkBomb, MEMORY_HOG } from '../support/hostile-workloads.js'
import { json, podLog } from '../support/http.js'
import {
  callPlatform,
  otherAccountKey,
  stopPlatform,
  TEST_ADMIN_KEY,
  testConfig,
  type CallInit,
  type TestConfig,
} from '../support/platform.js'
import { loadWorkerImage, WORKER_IMAGE } from '../support/worker-image.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'
import { hostConfigOf } from '../support/engine-disk.js'
import { untilFound } from '../support/until.js'

/**
 * Tenant containment on the docker driver (docs/security.md, "Containment"), against this
 * machine's engine (PODYARD_TEST_DOCKER=1): a second, ordinary account's pods and workers get
 * the memory, vCPUs and processes they rented as limits, and are told when the memory limit
 * killed them; this engine (overlay2 on ext4) cannot size a container's disk, so the host says
 * so and runs only the admin's workloads unless the operator accepts that in its config.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker containment tests skipped: set PODYARD_TEST_DOCKER=1')

const IMAGE = 'podyard-conformance/plain:1'
const HOST = 'sim-l4-1'

/** Two GPUs on 2 vCPUs and 2 GB: a one-GPU pod or worker rents 1 vCPU and 1 GB. */
const FLEET = simulatedDockerFleet({ hostId: HOST, memoryGb: 2 })

/** busybox's sh dies at the first fork refused, having noted how many it made. */
const FORK_BOMB = forkBomb({ quiet: false })

/** A podyard/worker whose jobs hold `chunks` × 64 MB of touched memory. */
const HUNGRY_WORKER =
  'exec node --input-type=module -e \'import { serve } from "/opt/worker-sdk/index.js"; ' +
  'serve(async (job) => { const held = []; for (let i = 0; i < job.input.chunks; i++) ' +
  "held.push(Buffer.alloc(64 * 1024 * 1024, 1)); return { held: held.length } })'"

interface PodJson {
  id: string
  status: string
  statusReason: string | null
}

interface HostJson {
  unenforcedLimits: { limit: string; reason: string; accepted: boolean }[]
}

/** A platform on the fleet above with this machine's engine, and a member account's key. */
async function containmentPlatform(overrides: TestConfig = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-containment-'))
  writeFileSync(path.join(dir, 'fleet.yaml'), FLEET)
  const platform = await startPlatform(
    testConfig(dir, {
      fleet: path.join(dir, 'fleet.yaml'),
      driver: 'docker',
      workers: { pingIntervalMs: 2_000 },
      ...overrides,
    }),
    { logger: pino({ level: 'silent' }) },
  )
  const memberKey = await otherAccountKey(platform, `member-${path.basename(dir)}@example.com`)
  return {
    platform,
    memberKey,
    /** As the admin unless `init.key` says otherwise. */
    call: (p: string, init?: CallInit) => callPlatform(platform.url, p, init),
    /** As the member account. */
    member: (p: string, init: CallInit = {}) =>
      callPlatform(platform.url, p, { ...init, key: memberKey }),
    close: async () => {
      await stopPlatform(platform)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function waitForStatus(
  call: (p: string) => Promise<Response>,
  id: string,
  status: string,
  timeoutMs = 60_000,
): Promise<PodJson> {
  let last: PodJson | undefined
  try {
    return await untilFound(
      `pod ${id} ${status}`,
      async () => {
        last = await json<PodJson>(await call(`/v2/pods/${id}`))
        return last.status === status ? last : undefined
      },
      timeoutMs,
    )
  } catch {
    throw new Error(`pod ${id} is ${last?.status} (${last?.statusReason}), not ${status}`)
  }
}

const GIB = 1024 ** 3

describe.runIf(enabled)('containment: the operator accepts an unenforced disk', () => {
  let env: Awaited<ReturnType<typeof containmentPlatform>>

  beforeAll(async () => {
    await loadWorkerImage(new Docker())
    env = await containmentPlatform({ containment: { acceptUnenforced: ['disk'] } })
  }, 120_000)

  afterAll(async () => {
    await env?.close()
  }, 60_000)

  it("gives a member's pod the vCPU, memory and processes it rented, and its fork bomb stops there while the platform answers", async () => {
    const { member, call } = env
    const host = await untilFound('the host report', async () => {
      const seen = await json<HostJson>(await call(`/v2/admin/hosts/${HOST}`))
      return seen.unenforcedLimits.length > 0 ? seen : undefined
    })
    expect(host.unenforcedLimits).toEqual([
      { limit: 'disk', reason: expect.stringMatching(/overlay2 on extfs/), accepted: true },
    ])

    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: { name: 'bomb', image: IMAGE, gpu: { id: 'NVIDIA L4', count: 1 }, args: FORK_BOMB },
      }),
      201,
    )
    let ready = true
    let polls = 0
    const readyz = (async () => {
      while (ready) {
        const answer = await fetch(`${env.platform.url}/readyz`)
        if (answer.status !== 200) throw new Error(`/readyz answered ${answer.status}`)
        polls += 1
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
    expect(polls).toBeGreaterThan(0)

    const limits = hostConfigOf(pod.id)
    expect(limits).toMatchObject({
      NanoCpus: 1_000_000_000,
      Memory: GIB,
      MemorySwap: GIB,
      PidsLimit: PIDS_PER_VCPU,
    })
    // This engine cannot size it: the operator accepted that.
    expect(limits.StorageOpt ?? null).toBeNull()
    // docker-init, the pod's shell and the bomb's shell hold three of the pids.
    expect(forked).toBeLessThan(PIDS_PER_VCPU)
    expect(forked).toBeGreaterThan(PIDS_PER_VCPU - 10)
    expect(await podLog(member, pod.id, 'container')).toContain(
      "sh: can't fork: Resource temporarily unavailable",
    )
    // The pod itself lives on (the bomb's shell died, the pod's stayed): RUNNING once the
    // lifecycle has seen it up, which a loaded machine may take a moment after the bomb.
    await expect
      .poll(async () => (await json<PodJson>(await member(`/v2/pods/${pod.id}`))).status, {
        timeout: 60_000,
        interval: 250,
      })
      .toBe('RUNNING')
    await member(`/v2/pods/${pod.id}`, { method: 'DELETE' })
  }, 120_000)

  it('tells a pod the memory limit killed it, and restarts it by its policy', async () => {
    const { member } = env
    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: { name: 'hog', image: IMAGE, gpu: { id: 'NVIDIA L4', count: 1 }, args: MEMORY_HOG },
      }),
      201,
    )
    const failed = await waitForStatus(member, pod.id, 'ERROR', 120_000)
    expect(failed.statusReason).toBe('out of memory: the pod used its 1 GB after 3 restarts')
    const system = await podLog(member, pod.id, 'system')
    for (let restart = 1; restart <= 3; restart++) {
      expect(system).toContain(
        `PROVISIONING: out of memory: the pod used its 1 GB; restart ${restart} of 3`,
      )
    }
    expect(await podLog(member, pod.id, 'container')).not.toContain('survived')
  }, 150_000)

  it("fails a member's job whose worker the memory limit killed, with why", async () => {
    const { member } = env
    const template = await json<{ id: string }>(
      await member('/v2/templates', {
        method: 'POST',
        json: { name: 'hungry', image: WORKER_IMAGE, args: HUNGRY_WORKER, serverless: true },
      }),
      201,
    )
    const endpoint = await json<{ id: string }>(
      await member('/v2/serverless', {
        method: 'POST',
        json: {
          name: 'hungry',
          templateId: template.id,
          gpu: { pools: ['AMPERE_24'], count: 1 },
          workers: { min: 0, max: 1 },
        },
      }),
      201,
    )
    const small = await json<{ status: string; output?: unknown }>(
      await member(`/v2/${endpoint.id}/runsync?wait=60000`, {
        method: 'POST',
        json: { input: { chunks: 2 } },
      }),
    )
    expect(small).toMatchObject({ status: 'COMPLETED', output: { held: 2 } })
    const hungry = await json<{ status: string; error?: string }>(
      await member(`/v2/${endpoint.id}/runsync?wait=60000`, {
        method: 'POST',
        json: { input: { chunks: 24 } },
      }),
    )
    expect(hungry).toMatchObject({
      status: 'FAILED',
      error: 'out of memory: the worker used its 1 GB',
    })
    const { workers } = await json<{ workers: { status: string; reason: string | null }[] }>(
      await member(`/v2/serverless/${endpoint.id}/workers`),
    )
    expect(workers).toContainEqual(
      expect.objectContaining({ reason: 'out of memory: the worker used its 1 GB while ready' }),
    )
    await member(`/v2/serverless/${endpoint.id}`, { method: 'DELETE' })
  }, 150_000)
})

describe.runIf(enabled)('containment: a host that cannot size a container disk', () => {
  let env: Awaited<ReturnType<typeof containmentPlatform>>

  beforeAll(async () => {
    env = await containmentPlatform()
  }, 120_000)

  afterAll(async () => {
    await env?.close()
  }, 60_000)

  it("says so, refuses a member's pods and workers there with the reason, and runs the admin's", async () => {
    const { member, call, platform } = env
    const host = await untilFound('the host report', async () => {
      const seen = await json<HostJson>(await call(`/v2/admin/hosts/${HOST}`))
      return seen.unenforcedLimits.length > 0 ? seen : undefined
    })
    expect(host.unenforcedLimits).toEqual([
      {
        limit: 'disk',
        reason: expect.stringMatching(
          /^the storage driver overlay2 on extfs does not enforce a container disk size \(the engine says: --storage-opt is supported only for overlay over xfs with 'pquota' mount option\)/,
        ),
        accepted: false,
      },
    ])
    const shown = await runCli([
      'hosts',
      'get',
      HOST,
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(shown.stdout).toMatch(
      /^unenforced {2}disk: the storage driver overlay2 on extfs .*; only the admin account's workloads start here \(containment\.acceptUnenforced\)$/m,
    )

    const body = { image: IMAGE, gpu: { id: 'NVIDIA L4', count: 1 }, args: 'exec sleep 600' }
    const refused = await json<PodJson>(
      await member('/v2/pods', { method: 'POST', json: { ...body, name: 'refused' } }),
      201,
    )
    const error = await waitForStatus(member, refused.id, 'ERROR')
    expect(error.statusReason).toMatch(
      /^not started: this host does not enforce the disk limit \(disk: the storage driver overlay2 on extfs does not enforce a container disk size .*\), which only the admin account's workloads may run without; the operator can accept the risk for every account with containment\.acceptUnenforced: \[disk\] \(docs\/security\.md\)$/,
    )
    const admins = await json<PodJson>(
      await call('/v2/pods', { method: 'POST', json: { ...body, name: 'admins' } }),
      201,
    )
    await waitForStatus(call, admins.id, 'RUNNING')
    await call(`/v2/pods/${admins.id}`, { method: 'DELETE' })

    const endpoint = await json<{ id: string }>(
      await member('/v2/serverless', {
        method: 'POST',
        json: {
          name: 'refused',
          image: WORKER_IMAGE,
          gpu: { pools: ['AMPERE_24'], count: 1 },
          workers: { min: 1, max: 1 },
        },
      }),
      201,
    )
    const throttled = await untilFound('the worker to be refused', async () => {
      const { workers } = await json<{ workers: { status: string; reason: string | null }[] }>(
        await member(`/v2/serverless/${endpoint.id}/workers`),
      )
      return workers.find((w) => w.reason?.includes('does not enforce the disk limit'))
    })
    expect(throttled.status).toBe('THROTTLED')
    expect(throttled.reason).toMatch(
      /does not enforce the disk limit \(disk: .*\), which only the admin account's workloads may run without \(containment\.acceptUnenforced, docs\/security\.md\)/,
    )
  }, 120_000)
})
