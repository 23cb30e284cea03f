import { execFileSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { json } from '../support/http.js'
import { abuseSuite } from '../support/abuse-suite.js'
import { containerOf } from '../support/docker-log-pods.js'
import { simulatedDockerFleet } from '../support/docker-fleet.js'

/**
 * The abuse suite on the docker driver (PODYARD_TEST_ABUSE=1 and PODYARD_TEST_DOCKER=1): a
 * member's containers with their limits, per-account networks and the host's firewall,
 * against `podyard serve` as a child process (docs/security.md, "The abuse suite").
 */
const enabled = process.env.PODYARD_TEST_ABUSE === '1' && process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) {
  console.log('abuse suite (docker driver) skipped: set PODYARD_TEST_ABUSE=1 PODYARD_TEST_DOCKER=1')
}

const HOST = `abuse-docker-${process.pid}`

interface HostJson {
  unenforcedLimits: { limit: string; reason: string; accepted: boolean }[]
}

describe.runIf(enabled)('abuse suite: docker driver', () => {
  abuseSuite({
    name: 'docker',
    image: 'podyard-conformance/plain:1',
    // This engine may not size a container's disk (overlay2 on ext4 does not): the members'
    // pods run anyway, which the disk attack checks the host reports.
    config: { driver: 'docker', containment: { acceptUnenforced: ['disk'] } },
    fleet: simulatedDockerFleet({ hostId: HOST, memoryGb: 2 }),
    quietForkBomb: false,
    checkDiskFill: async (platform, podId, log) => {
      const text = log.join('\n')
      const host = await json<HostJson>(await platform.call(`/v2/admin/hosts/${HOST}`))
      const disk = host.unenforcedLimits.find((l) => l.limit === 'disk')
      if (disk === undefined) {
        // The engine sizes the container's writable layer: the write stops there.
        expect(text).toMatch(/No space left on device/)
        expect(text).toContain('dd exit 1')
        return 'contained'
      } else {
        // It does not: the host says so, and the operator accepted it for this platform; the
        // write went past `disk` into the engine's storage, not the data directory.
        console.log(`abuse docker disk-fill: disk unenforced here: ${disk.reason}`)
        expect(disk.accepted).toBe(true)
        expect(disk.reason).toMatch(/does not enforce a container disk size/)
        expect(text).toContain('dd exit 0')
        return 'uncontained'
      }
    },
    podAddress: (podId) =>
      execFileSync(
        'docker',
        [
          'inspect',
          '-f',
          '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}',
          containerOf(podId),
        ],
        { encoding: 'utf8' },
      ).split(' ')[0],
    logBytesOutside: (podId) => {
      const logPath = execFileSync(
        'docker',
        ['inspect', '-f', '{{.LogPath}}', containerOf(podId)],
        {
          encoding: 'utf8',
        },
      ).trim()
      const dir = path.dirname(logPath)
      return readdirSync(dir)
        .filter((name) => name.startsWith(path.basename(logPath)))
        .reduce((sum, name) => sum + statSync(path.join(dir, name)).size, 0)
    },
    cleanUp: (podIds) => {
      for (const podId of podIds) {
        const container = containerOf(podId)
        if (container !== '') execFileSync('docker', ['rm', '-f', container], { stdio: 'ignore' })
      }
    },
  })
})
