import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { fakeNvidiaSmi, type FakeNvidiaSmi } from '../support/fake-nvidia-smi.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { until } from '../support/until.js'

/**
 * XID errors from the kernel log (docs/gpus.md): the local host's sampler follows
 * `gpus.kernelLog`, here a file the test appends kernel lines to as the NVIDIA driver writes
 * them; a stand-in nvidia-smi on PATH plays the GPUs. An XID of a faulty GPU withdraws it (its
 * pods told), an application's XID is a warning, and a kernel log that cannot be read is a
 * warning on the host.
 */
const H100 = 'NVIDIA H100 80GB HBM3'

function line(index: number): string {
  const bus = index === 0 ? '00000000:19:00.0' : '00000000:3B:00.0'
  return `${index}, GPU-${index}, ${bus}, 10, 20, 100, 81559, 50, 300.5, 0x0000000000000001, 0, No`
}

interface HostJson {
  state: string
  stateReason: string | null
  warnings: string[]
  gpus: Array<{ index: number; health: string; reason: string | null; warnings: string[] }>
}

describe('XIDs from the kernel log', () => {
  let platform: TestPlatform
  let smi: FakeNvidiaSmi
  let member: string
  let logDir: string
  let kernelLog: string
  const savedPath = process.env.PATH
  const host = async () => json<HostJson>(await platform.call('/v2/admin/hosts/local'))

  beforeAll(async () => {
    smi = fakeNvidiaSmi([H100, H100])
    smi.setQuery(`${line(0)}\n${line(1)}\n`)
    process.env.PATH = smi.path
    logDir = mkdtempSync(path.join(tmpdir(), 'podyard-kernel-log-'))
    // Not there yet: the host says so until it is.
    kernelLog = path.join(logDir, 'kern.log')
    platform = await startTestPlatform({
      fleet: 'none',
      sandbox: 'none',
      gpus: { probeImage: 'ubuntu:24.04', kernelLog },
    })
    member = await otherAccountKey(platform, 'gpu-kernel-log@example.com')
  }, 60_000)

  afterAll(async () => {
    process.env.PATH = savedPath
    await platform?.close()
    rmSync(smi.dir, { recursive: true, force: true })
    rmSync(logDir, { recursive: true, force: true })
  })

  it('warns on the host while the kernel log cannot be read', async () => {
    const warned = await until('the warning', host, (h) =>
      h.warnings.some((w) => w.includes('kernel log')),
    )
    expect(warned.warnings).toContain(
      `the kernel log ${kernelLog} cannot be read (ENOENT): GPU XID errors are not seen (gpus.kernelLog, docs/gpus.md)`,
    )
    const cli = await runCli([
      'hosts',
      'get',
      'local',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(cli.stdout).toContain(`warning     the kernel log ${kernelLog} cannot be read (ENOENT)`)

    // Lines already in the file when it is opened are history, not news.
    writeFileSync(
      kernelLog,
      'NVRM: Xid (PCI:0000:19:00): 79, pid=1, name=old, GPU has fallen off the bus.\n',
    )
    await until(
      'the warning goes',
      host,
      (h) => !h.warnings.some((w) => w.includes('kernel log')),
      15_000,
    )
  })

  it("shows an application's XID as a warning and withdraws the GPU on a hardware XID", async () => {
    const pod = await json<{ id: string }>(
      await platform.call('/v2/pods', {
        method: 'POST',
        key: member,
        json: {
          name: 'xid',
          image: 'ubuntu',
          gpu: { id: H100, count: 2 },
          disk: 1,
          args: 'sleep 600',
        },
      }),
      201,
    )
    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect((await host()).gpus.map((g) => g.health)).toEqual(['HEALTHY', 'HEALTHY'])

    appendFileSync(
      kernelLog,
      'eth0: Link is Up - 25Gbps/Full - flow control off\n' +
        'NVRM: Xid (PCI:0000:19:00): 13, pid=40121, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n',
    )
    const warned = await until('GPU 0 warned', host, (h) => h.gpus[0]!.warnings.length > 0)
    expect(warned.gpus[0]!.health).toBe('HEALTHY')
    expect(warned.gpus[0]!.warnings[0]).toMatch(/^XID 13 \(usually the application's fault\) at 20/)
    expect(warned.state).toBe('UP')

    // A /dev/kmsg record, as the kernel hands it out, is read the same way.
    appendFileSync(
      kernelLog,
      `3,1822,${Math.floor(1e15)},-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n`,
    )
    const degraded = await until('host DEGRADED', host, (h) => h.state === 'DEGRADED')
    expect(degraded.stateReason).toBe('GPU 1 withdrawn: XID 79')
    expect(degraded.gpus[0]!.health).toBe('HEALTHY')
    const told = await until(
      'the pod is told',
      async () =>
        json<{ statusReason?: string | null }>(
          await platform.call(`/v2/pods/${pod.id}`, { key: member }),
        ),
      (p) => Boolean(p.statusReason),
    )
    expect(told.statusReason).toBe('GPU 1 of host local withdrawn: XID 79')
    expect(
      (await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE', key: member })).status,
    ).toBe(204)
  })
})
