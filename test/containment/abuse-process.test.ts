import { readdirSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { probeBubblewrap } from '../../src/runtime/process/bubblewrap.js'
import { DiskBounds } from '../../src/runtime/disk-bounds/disk-bounds.js'
import { probePodNetwork } from '../../src/runtime/process/pod-network.js'
import { DEFAULT_SANDBOX_UID_BASE } from '../../src/runtime/process/sandbox-users.js'
import { probeTestCgroups } from '../support/cgroup-probe.js'
import { abuseSuite } from '../support/abuse-suite.js'
import { fleetYaml, gpuHost } from '../support/fleet-yaml.js'

/**
 * The abuse suite on the process driver with bubblewrap (PODYARD_TEST_ABUSE=1): every
 * containment of a member's pod at once, cgroups, disk images and network namespaces, against
 * `podyard serve` as a child process (docs/security.md, "The abuse suite").
 */
const enabled = process.env.PODYARD_TEST_ABUSE === '1'
const GIB = 1024 ** 3

async function whatThisHostLacks(): Promise<string[]> {
  const lacks: string[] = []
  const bubblewrap = await probeBubblewrap({
    searchPath: process.env.PATH,
    probeUid: DEFAULT_SANDBOX_UID_BASE,
  })
  if (!bubblewrap.ok) lacks.push(bubblewrap.reason)
  const network = await probePodNetwork(process.env.PATH)
  if (!network.ok) lacks.push(network.reason)
  const probeDir = mkdtempSync(path.join(tmpdir(), 'podyard-abuse-probe-'))
  try {
    const cgroups = await probeTestCgroups()
    if (!cgroups.ok) lacks.push(cgroups.reason)
    const disk = await new DiskBounds({ mode: 'auto', root: probeDir, probeDir }).unenforced()
    lacks.push(...disk.map((d) => d.reason))
  } finally {
    rmSync(probeDir, { recursive: true, force: true })
  }
  return lacks
}

const lacks = enabled ? await whatThisHostLacks() : []
if (!enabled) console.log('abuse suite (process driver) skipped: set PODYARD_TEST_ABUSE=1')
else if (lacks.length > 0) console.log(`abuse suite (process driver) left out: ${lacks.join('; ')}`)

const FLEET = fleetYaml({
  hosts: [
    gpuHost(`abuse-process-${process.pid}`, 'NVIDIA L4', 2, {
      vcpus: 2,
      memoryGb: 2,
      driver: 'process',
    }),
  ],
})

describe.runIf(enabled && lacks.length === 0)('abuse suite: process driver', () => {
  abuseSuite({
    name: 'process',
    image: 'ubuntu',
    config: { sandbox: 'bubblewrap' },
    fleet: FLEET,
    quietForkBomb: true,
    checkDiskFill: (platform, podId, log) => {
      const text = log.join('\n')
      expect(text).toMatch(/dd: error writing '\/root\/fill': No space left on device/)
      expect(text).toContain('dd exit 1')
      // What reached the host's disk: the image, at most its size.
      const podDir = path.join(platform.dataDir, 'pods', podId)
      const image = statSync(path.join(podDir, 'disk.ext4'))
      expect(image.size).toBe(1 * GIB)
      expect(image.blocks * 512).toBeLessThanOrEqual(1 * GIB)
      expect(readdirSync(podDir)).toContain('disk')
      return 'contained'
    },
  })
})
