import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { json, podLog } from '../support/http.js'
import { fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import { otherAccountKey, startTestPlatform, type CallInit } from '../support/platform.js'
import { untilFound } from '../support/until.js'

/**
 * A process-driver workload's disk writes held to its rule (containment.diskWrite;
 * docs/security.md, "Disk writes") by its cgroup (blkio on cgroup v1, io.max on v2) on the disk
 * of the data directory, as an ordinary account over HTTP; a host whose cgroups cannot limit
 * them says why in its host view.
 */
const bubblewrap = await probeBubblewrap({
  searchPath: process.env.PATH,
  probeUid: DEFAULT_SANDBOX_UID_BASE,
})
const runnable = bubblewrap.ok && process.getuid?.() === 0
if (!runnable) {
  console.log(
    `containment-disk-write-process: left out: ${bubblewrap.ok ? 'the server is not root' : bubblewrap.reason}`,
  )
}

const HOST = 'sim-process-1'
const FLEET = fleetYaml({
  hosts: [gpuHost(HOST, 'NVIDIA L4', 2, { vcpus: 2, memoryGb: 2, driver: 'process' })],
})
const MIB = 1024 * 1024
const MIB_PER_VCPU = 16
const IOPS_PER_VCPU = 200
const WRITE_MIB = 48

/** Writes WRITE_MIB MiB with O_DIRECT into its container disk, then says how long it took. */
const DIRECT_WRITE =
  'a=$(cut -d" " -f1 /proc/uptime); ' +
  `dd if=/dev/zero of=$HOME/written bs=1M count=${WRITE_MIB} oflag=direct 2>/dev/null; ` +
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

/** The write limit files of the cgroups a process is in (v1 blkio, or v2's io.max). */
function writeLimitsOfPid(pid: number): string {
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
    const match = /^\d+:([^:]*):(\/.*podyard-.*)$/.exec(line)
    if (!match) continue
    if (match[1] === 'blkio') {
      const dir = `/sys/fs/cgroup/blkio${match[2]}`
      return ['write_bps_device', 'write_iops_device']
        .map((f) => readFileSync(`${dir}/blkio.throttle.${f}`, 'utf8').trim())
        .join('\n')
    }
    if (match[1] === '') return readFileSync(`/sys/fs/cgroup${match[2]}/io.max`, 'utf8').trim()
  }
  throw new Error(`process ${pid} is in no blkio or v2 cgroup of podyard`)
}

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

async function platformWith(mibPerSecondPerVcpu: number, iopsPerVcpu: number) {
  const platform = await startTestPlatform(
    {
      sandbox: 'bubblewrap',
      containment: { acceptUnenforced: [], diskWrite: { mibPerSecondPerVcpu, iopsPerVcpu } },
    },
    { fleetYaml: FLEET },
  )
  const key = await otherAccountKey(platform, `writer-${mibPerSecondPerVcpu}@example.com`)
  const member = (p: string, init: CallInit = {}) => platform.call(p, { ...init, key })
  const report = await json<HostJson>(await platform.call(`/v2/admin/hosts/${HOST}`))
  return { platform, member, report }
}

describe.runIf(runnable)("disk writes on the process driver: a member's pod", () => {
  let env: Awaited<ReturnType<typeof platformWith>>

  beforeAll(async () => {
    env = await platformWith(MIB_PER_VCPU, IOPS_PER_VCPU)
  }, 120_000)

  afterAll(async () => {
    await env?.platform.close()
  }, 60_000)

  it('is held to its rule by its cgroup, and a direct write into its container disk runs at about that rate', async () => {
    const { member, report, platform } = env
    const diskWrite = report.unenforcedLimits.find((u) => u.limit === 'diskWrite')
    if (diskWrite) {
      // Where the cgroup version is known (test/support/cgroup-v2-vm.sh), the limit must hold.
      expect(process.env.PODYARD_TEST_CGROUP_VERSION, diskWrite.reason).toBeUndefined()
      // No io or blkio controller, or a data directory on no disk: the host says so.
      console.log(`disk write rate not measured: this host reports ${diskWrite.reason}`)
      expect(diskWrite).toEqual({
        limit: 'diskWrite',
        reason: expect.stringMatching(/io controller|blkio controller|no disk a write limit/),
        accepted: false,
      })
      return
    }
    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: {
          name: 'writer',
          image: 'ubuntu',
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
    const limits = writeLimitsOfPid(workloadPid(platform.config.dataDir, pod.id))
    // One vCPU rented: the rule's rates, on the disk of the data directory.
    const rate = String(MIB_PER_VCPU * MIB)
    expect(limits).toMatch(
      new RegExp(
        `^\\d+:\\d+ (${rate}\\n\\d+:\\d+ ${IOPS_PER_VCPU}|.*\\bwbps=${rate}\\b.*\\bwiops=${IOPS_PER_VCPU}\\b.*)$`,
        'm',
      ),
    )
    const seconds = Number(/^wrote in ([\d.]+) s$/.exec(line)?.[1])
    const measured = WRITE_MIB / seconds
    console.log(
      `process driver: a direct write of ${WRITE_MIB} MiB ran at ${measured.toFixed(1)} MiB/s (limit ${MIB_PER_VCPU})`,
    )
    expect(measured).toBeLessThan(MIB_PER_VCPU * 1.3)
    expect(measured).toBeGreaterThan(MIB_PER_VCPU / 4)
    await member(`/v2/pods/${pod.id}`, { method: 'DELETE' })
  }, 120_000)
})

describe.runIf(runnable)('disk writes on the process driver: a rule that limits nothing', () => {
  let env: Awaited<ReturnType<typeof platformWith>>

  beforeAll(async () => {
    env = await platformWith(0, 0)
  }, 120_000)

  afterAll(async () => {
    await env?.platform.close()
  }, 60_000)

  it("is reported by the host, and a member's pod is refused with why", async () => {
    const { member, report } = env
    expect(report.unenforcedLimits).toContainEqual({
      limit: 'diskWrite',
      reason: 'containment.diskWrite is 0 for both bandwidth and operations (docs/security.md)',
      accepted: false,
    })
    const pod = await json<PodJson>(
      await member('/v2/pods', {
        method: 'POST',
        json: {
          name: 'refused',
          image: 'ubuntu',
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
      /^not started: this host does not enforce the diskWrite limit \(diskWrite: containment\.diskWrite is 0 .*\)/,
    )
  }, 120_000)
})
