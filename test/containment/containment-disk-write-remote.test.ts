import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { runCli } from '../support/cli.js'
import { dataRootDisk, hostConfigOf } from '../support/engine-disk.js'
import { EU_SE_1, fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import { json, podLog } from '../support/http.js'
import {
  callPlatform,
  otherAccountKey,
  stopPlatform,
  TEST_ADMIN_KEY,
  testConfig,
  type CallInit,
} from '../support/platform.js'
import { untilFound } from '../support/until.js'

/**
 * Disk write limits on an engine podyard reaches as another machine's (docs/fleet.md, "The disk
 * of a remote engine"; docs/security.md, "Disk writes"): podyard cannot find the disk under such
 * an engine's data root, so the host declares it (`docker.dataDisk`). Run against this
 * machine's engine reached as `unix:///var/run/docker.sock` (PODYARD_TEST_DOCKER=1), as an
 * ordinary account over HTTP: a host that declares the disk limits its containers' writes on
 * it; one that declares none, or a device its engine's machine lacks, says so and why.
 */
const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('remote engine disk write tests skipped: set PODYARD_TEST_DOCKER=1')

const IMAGE = 'podyard-conformance/plain:1'
const ENGINE = 'unix:///var/run/docker.sock'
const MIB = 1024 * 1024
const MIB_PER_VCPU = 16
const IOPS_PER_VCPU = 200
const WRITE_MIB = 48
const WRITE =
  'a=$(cut -d" " -f1 /proc/uptime); ' +
  `dd if=/dev/zero of=/tmp/written bs=1M count=${WRITE_MIB} oflag=direct 2>/dev/null; ` +
  'b=$(cut -d" " -f1 /proc/uptime); echo "wrote in $(awk "BEGIN{print $b-$a}") s"; ' +
  'exec sleep 600'

interface HostJson {
  unenforcedLimits: { limit: string; reason: string; accepted: boolean }[]
}

describe.runIf(enabled)(
  "disk writes on another machine's engine: the host declares its disk",
  () => {
    let dir: string
    let platform: Platform
    let memberKey: string
    const admin = (p: string, init?: CallInit) => callPlatform(platform.url, p, init)
    const member = (p: string, init: CallInit = {}) =>
      callPlatform(platform.url, p, { ...init, key: memberKey })
    const cli = (...args: string[]) =>
      runCli([...args, '--url', platform.url, '--api-key', TEST_ADMIN_KEY])

    /** The host's diskWrite entry once its engine has been tried (null: enforced). */
    async function diskWriteOf(hostId: string) {
      return untilFound(`${hostId}'s engine trial`, async () => {
        const host = await json<HostJson>(await admin(`/v2/admin/hosts/${hostId}`))
        if (host.unenforcedLimits.length === 0) return undefined
        return { entry: host.unenforcedLimits.find((u) => u.limit === 'diskWrite') ?? null }
      })
    }

    beforeAll(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'podyard-remote-disk-write-'))
      const remote = (id: string, dataDisk?: string) =>
        gpuHost(id, 'NVIDIA L4', 1, {
          vcpus: 1,
          memoryGb: 1,
          driver: 'docker',
          simulated: true,
          docker: { url: ENGINE, ...(dataDisk ? { dataDisk } : {}) },
        })
      writeFileSync(
        path.join(dir, 'fleet.yaml'),
        fleetYaml({
          dataCenters: [EU_SE_1],
          hosts: [remote('undeclared'), remote('wrong-disk', '/dev/podyard-no-such-disk')],
        }),
      )
      platform = await startPlatform(
        testConfig(dir, {
          fleet: path.join(dir, 'fleet.yaml'),
          driver: 'docker',
          containment: {
            acceptUnenforced: ['disk'],
            diskWrite: { mibPerSecondPerVcpu: MIB_PER_VCPU, iopsPerVcpu: IOPS_PER_VCPU },
          },
        }),
        { logger: pino({ level: 'silent' }) },
      )
      memberKey = await otherAccountKey(platform, 'remote-writer@example.com')
    }, 120_000)

    afterAll(async () => {
      if (platform) await stopPlatform(platform)
      rmSync(dir, { recursive: true, force: true })
    }, 60_000)

    it('a host added with --data-disk limits a member container’s writes on that disk', async () => {
      const disk = dataRootDisk()
      const added = await cli(
        'hosts',
        'add',
        'declared',
        '--data-center',
        EU_SE_1.id,
        '--vcpus',
        '1',
        '--memory-gb',
        '1',
        '--gpu',
        'NVIDIA L4',
        '--docker-url',
        ENGINE,
        '--simulated',
        '--data-disk',
        disk,
        '--label',
        'disk=declared',
      )
      expect(added.code, added.stderr).toBe(0)
      expect((await diskWriteOf('declared')).entry).toBeNull()

      const pod = await json<{ id: string }>(
        await member('/v2/pods', {
          method: 'POST',
          json: {
            name: 'remote-writer',
            image: IMAGE,
            gpu: { id: 'NVIDIA L4', count: 1 },
            hostLabels: ['disk=declared'],
            args: WRITE,
          },
        }),
        201,
      )
      const line = await untilFound(
        'the write to end',
        async () => (await podLog(member, pod.id)).find((l) => l.startsWith('wrote in ')),
        60_000,
      )
      expect(hostConfigOf(pod.id)).toMatchObject({
        BlkioDeviceWriteBps: [{ Path: disk, Rate: MIB_PER_VCPU * MIB }],
        BlkioDeviceWriteIOps: [{ Path: disk, Rate: IOPS_PER_VCPU }],
      })
      const rate = WRITE_MIB / Number(/^wrote in ([\d.]+) s$/.exec(line)?.[1])
      console.log(`remote engine: a direct write ran at ${rate.toFixed(1)} MiB/s (limit 16)`)
      expect(rate).toBeLessThan(MIB_PER_VCPU * 1.3)
      await member(`/v2/pods/${pod.id}`, { method: 'DELETE' })
    }, 120_000)

    it('a host that declares no disk reports diskWrite unenforced and says what to declare', async () => {
      const { entry } = await diskWriteOf('undeclared')
      expect(entry).toEqual({
        limit: 'diskWrite',
        reason: `the engine (${ENGINE}) is on another machine and its host declares no docker.dataDisk (the disk under its data root, docs/fleet.md): podyard finds that disk for this machine's engine only`,
        accepted: false,
      })
    })

    it("a remote engine's host reports network volume sizes unenforced and refuses a member's pod on a volume", async () => {
      await diskWriteOf('undeclared')
      const host = await json<HostJson>(await admin('/v2/admin/hosts/undeclared'))
      expect(host.unenforcedLimits).toContainEqual({
        limit: 'volume',
        reason: `network volumes on the engine's machine (${ENGINE}) are plain directories bound into its containers: their sizes are billed, not enforced (docs/volumes.md)`,
        accepted: false,
      })
      const volume = await json<{ id: string }>(
        await member('/v2/network-volumes', {
          method: 'POST',
          json: { name: 'unbounded', size: 10, dataCenterId: EU_SE_1.id },
        }),
        201,
      )
      const pod = await json<{ id: string }>(
        await member('/v2/pods', {
          method: 'POST',
          json: {
            name: 'on-volume',
            image: IMAGE,
            gpu: { id: 'NVIDIA L4', count: 1 },
            mounts: { network: [{ volumeId: volume.id, path: '/runpod-volume' }] },
            args: 'exec sleep 600',
          },
        }),
        201,
      )
      const refused = await untilFound('the pod to be refused', async () => {
        const seen = await json<{ status?: string; statusReason?: string | null }>(
          await member(`/v2/pods/${pod.id}`),
        )
        return seen.status === 'ERROR' ? seen : undefined
      })
      expect(refused.statusReason).toMatch(
        /^not started: this host does not enforce the volume limit \(volume: network volumes on the engine's machine /,
      )
    })

    it('a declared disk the engine’s machine lacks is reported with the engine’s refusal', async () => {
      const { entry } = await diskWriteOf('wrong-disk')
      expect(entry?.reason).toMatch(
        /^docker\.dataDisk \/dev\/podyard-no-such-disk: the engine refuses write limits on it \(.*no such file or directory.*\); name the disk under its data root \(docs\/fleet\.md\)$/,
      )
      expect(entry?.accepted).toBe(false)
    })

    it('refuses --data-disk without the engine it belongs to, and a path that is no device', async () => {
      const alone = await cli('hosts', 'update', 'declared', '--data-disk', '/dev/vdb')
      expect(alone.code).toBe(2)
      expect(alone.stderr).toMatch(/--data-disk is the disk of the engine's machine: give it with/)
      const notDevice = await cli(
        'hosts',
        'update',
        'declared',
        '--docker-url',
        ENGINE,
        '--data-disk',
        'vdb',
      )
      expect(notDevice.code).not.toBe(0)
      expect(notDevice.stderr).toMatch(/dataDisk/)
    })
  },
)
