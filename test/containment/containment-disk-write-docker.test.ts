import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform } from '../../src/platform.js'
import { runCli } from '../support/cli.js'
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
import { simulatedDockerFleet } from '../support/docker-fleet.js'
import { dataRootDisk, hostConfigOf } from '../support/engine-disk.js'
import { untilFound } from '../support/until.js'

/**
 * A container's disk writes held to its rule (containment.diskWrite; docs/security.md, "Disk
 * writes"), against this machine's engine (PODYARD_TEST_DOCKER=1), as an ordinary account
 * over HTTP: the container carries the write limits on the disk of the engine's data root, a
 * direct write inside runs at about that rate, and a host whose rule limits nothing says so
 * and refuses the member's pods there.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('docker disk write tests skipped: set PODYARD_TEST_DOCKER=1')

const IMAGE = 'podyard-conformance/plain:1'
const HOST = 'sim-l4-1'
const FLEET = simulatedDockerFleet({ hostId: HOST, memoryGb: 2 })
const MIB = 1024 * 1024
/** Low enough to measure in a few seconds on any disk, far below what this one takes. */
const MIB_PER_VCPU = 16
const IOPS_PER_VCPU = 200
const WRITE_MIB = 48

/** Writes WRITE_MIB MiB with O_DIRECT, then says how long it took (from /proc/uptime). */
const DIRECT_WRITE =
  'a=$(cut -d" " -f1 /proc/uptime); ' +
  `dd if=/dev/zero of=/tmp/written bs=1M count=${WRITE_MIB} oflag=direct 2>/dev/null; ` +
  'b=$(cut -d" " -f1 /proc/uptime); echo "wrote in $(awk "BEGIN{print $b-$a}") s"; ' +
  'exec sleep 600'

interface PodJson {
  id: string
  status: string
  statusReason: string | null
}

interface HostJson {
  unenforcedLimits: { limit: string; reason: string; accepted: boolean }[]
}

async function platformWith(overrides: TestConfig) {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-disk-write-'))
  writeFileSync(path.join(dir, 'fleet.yaml'), FLEET)
  const platform = await startPlatform(
    testConfig(dir, { fleet: path.join(dir, 'fleet.yaml'), driver: 'docker', ...overrides }),
    { logger: pino({ level: 'silent' }) },
  )
  const memberKey = await otherAccountKey(platform, `writer-${path.basename(dir)}@example.com`)
  return {
    platform,
    call: (p: string, init?: CallInit) => callPlatform(platform.url, p, init),
    member: (p: string, init: CallInit = {}) =>
      callPlatform(platform.url, p, { ...init, key: memberKey }),
    close: async () => {
      await stopPlatform(platform)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The host's unenforced limits once the engine has been probed. */
async function reportOf(call: (p: string) => Promise<Response>): Promise<HostJson> {
  return untilFound('the host report', async () => {
    const seen = await json<HostJson>(await call(`/v2/admin/hosts/${HOST}`))
    return seen.unenforcedLimits.length > 0 ? seen : undefined
  })
}

describe.runIf(enabled)("disk writes: a member's container is held to its rule", () => {
  let env: Awaited<ReturnType<typeof platformWith>>

  beforeAll(async () => {
    env = await platformWith({
      containment: {
        acceptUnenforced: ['disk'],
        diskWrite: { mibPerSecondPerVcpu: MIB_PER_VCPU, iopsPerVcpu: IOPS_PER_VCPU },
      },
    })
  }, 120_000)

  afterAll(async () => {
    await env?.close()
  }, 60_000)

  it('sets the limits on the disk of the data root, and a direct write inside runs at about that rate', async () => {
    const { call, member } = env
    const report = await reportOf(call)
    const diskWrite = report.unenforcedLimits.find((u) => u.limit === 'diskWrite')
    if (diskWrite) {
      // An engine that cannot throttle block I/O: the host says why, and nothing is measured.
      console.log(`disk write rate not measured: this host reports ${diskWrite.reason}`)
      expect(diskWrite.reason).toMatch(/drops block I\/O write limits|no disk a write limit/)
      return
    }
    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: {
          name: 'writer',
          image: IMAGE,
          gpu: { id: 'NVIDIA L4', count: 1 },
          args: DIRECT_WRITE,
        },
      }),
      201,
    )
    const line = await untilFound(
      'the write to end',
      async () => (await podLog(member, pod.id)).find((l) => l.startsWith('wrote in ')),
      60_000,
    )
    const device = dataRootDisk()
    // A GPU pod of one L4 rents 1 vCPU.
    expect(hostConfigOf(pod.id)).toMatchObject({
      BlkioDeviceWriteBps: [{ Path: device, Rate: MIB_PER_VCPU * MIB }],
      BlkioDeviceWriteIOps: [{ Path: device, Rate: IOPS_PER_VCPU }],
    })
    const seconds = Number(/^wrote in ([\d.]+) s$/.exec(line)?.[1])
    const rate = WRITE_MIB / seconds
    console.log(
      `a direct write of ${WRITE_MIB} MiB ran at ${rate.toFixed(1)} MiB/s (limit ${MIB_PER_VCPU})`,
    )
    // Unlimited, this disk takes it at hundreds of MiB/s; the throttle lets a first burst by.
    expect(rate).toBeLessThan(MIB_PER_VCPU * 1.3)
    expect(rate).toBeGreaterThan(MIB_PER_VCPU / 4)
    await member(`/v2/pods/${pod.id}`, { method: 'DELETE' })
  }, 120_000)
})

describe.runIf(enabled)('disk writes: a rule that limits nothing', () => {
  let env: Awaited<ReturnType<typeof platformWith>>

  beforeAll(async () => {
    env = await platformWith({
      containment: {
        acceptUnenforced: ['disk'],
        diskWrite: { mibPerSecondPerVcpu: 0, iopsPerVcpu: 0 },
      },
    })
  }, 120_000)

  afterAll(async () => {
    await env?.close()
  }, 60_000)

  it("is reported by the host and in hosts get, and a member's pod is refused there with why", async () => {
    const { call, member, platform } = env
    const report = await reportOf(call)
    expect(report.unenforcedLimits).toContainEqual({
      limit: 'diskWrite',
      reason: 'containment.diskWrite is 0 for both bandwidth and operations (docs/security.md)',
      accepted: false,
    })
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
      /^unenforced {2}diskWrite: containment\.diskWrite is 0 .*; only the admin account's workloads start here \(containment\.acceptUnenforced\)$/m,
    )
    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: {
          name: 'refused',
          image: IMAGE,
          gpu: { id: 'NVIDIA L4', count: 1 },
          args: 'exec sleep 600',
        },
      }),
      201,
    )
    const refused = await untilFound('the pod to be refused', async () => {
      const seen = await json<PodJson>(await member(`/v2/pods/${pod.id}`))
      return seen.status === 'ERROR' ? seen : undefined
    })
    expect(refused.statusReason).toMatch(
      /^not started: this host does not enforce the diskWrite limit \(diskWrite: containment\.diskWrite is 0 .*\), which only the admin account's workloads may run without; the operator can accept the risk for every account with containment\.acceptUnenforced: \[diskWrite\] \(docs\/security\.md\)$/,
    )
  }, 120_000)
})
