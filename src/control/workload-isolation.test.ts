import { describe, expect, it } from 'vitest'
import type { WorkloadIsolation } from '../runtime/driver.js'
import type { ContainedLimit } from '../shared/contained-limits.js'
import {
  hostIsolationReason,
  isolationRefusal,
  NO_VOLUME,
  type IsolationPolicy,
} from './workload-isolation.js'

const DISK = {
  limit: 'disk' as const,
  reason: 'the storage driver overlay2 on extfs does not enforce a container disk size',
}
const PIDS = { limit: 'pids' as const, reason: 'the engine cannot limit processes' }

const docker = (unenforced?: WorkloadIsolation['unenforced']) => ({
  isolation: async (): Promise<WorkloadIsolation> => ({
    level: 'container',
    detail: 'Docker containers',
    ...(unenforced ? { unenforced } : {}),
  }),
})

function policy(acceptUnenforced: ContainedLimit[] = [], admin = 'admin'): IsolationPolicy {
  return {
    trusted: async (accountId) => accountId === admin,
    unisolatedForEveryone: false,
    acceptUnenforced,
  }
}

describe('isolationRefusal: limits a host does not enforce', () => {
  it("refuses another account's workload where a limit is unenforced, saying which and how to accept it", async () => {
    expect(await isolationRefusal(docker([DISK]), 'member', policy(), NO_VOLUME)).toBe(
      'not started: this host does not enforce the disk limit (disk: the storage driver overlay2 on extfs does not enforce a container disk size), ' +
        "which only the admin account's workloads may run without; the operator can accept the risk for every account with " +
        'containment.acceptUnenforced: [disk] (docs/security.md)',
    )
  })

  it("lets the admin's workloads run there", async () => {
    expect(await isolationRefusal(docker([DISK]), 'admin', policy(), NO_VOLUME)).toBeNull()
  })

  it('lets everyone run where the operator accepted every unenforced limit, and names only the others', async () => {
    expect(await isolationRefusal(docker([DISK]), 'member', policy(['disk']), NO_VOLUME)).toBeNull()
    const refusal = await isolationRefusal(
      docker([DISK, PIDS]),
      'member',
      policy(['disk']),
      NO_VOLUME,
    )
    expect(refusal).toMatch(/^not started: this host does not enforce the pids limit \(pids: /)
    expect(refusal).toMatch(/containment\.acceptUnenforced: \[pids\]/)
    expect(await isolationRefusal(docker([DISK, PIDS]), 'member', policy(), NO_VOLUME)).toMatch(
      /does not enforce the disk, pids limits .* containment\.acceptUnenforced: \[disk, pids\]/,
    )
  })

  it('refuses nothing for a driver that enforces every limit, or says nothing of them', async () => {
    expect(await isolationRefusal(docker([]), 'member', policy(), NO_VOLUME)).toBeNull()
    expect(await isolationRefusal(docker(), 'member', policy(), NO_VOLUME)).toBeNull()
  })

  it('phrases the same rule for a list of hosts', async () => {
    expect(await hostIsolationReason(docker([DISK]), 'member', policy(), NO_VOLUME)).toBe(
      'does not enforce the disk limit (disk: the storage driver overlay2 on extfs does not enforce a container disk size), ' +
        "which only the admin account's workloads may run without (containment.acceptUnenforced, docs/security.md)",
    )
    expect(await hostIsolationReason(docker([DISK]), 'admin', policy(), NO_VOLUME)).toBeNull()
    expect(
      await hostIsolationReason(docker([DISK]), 'member', policy(['disk']), NO_VOLUME),
    ).toBeNull()
  })
})

describe('isolationRefusal: network volume sizes', () => {
  const VOLUME = { limit: 'volume' as const, reason: 'containment.processDisk is none' }
  const mounting = { mountsVolume: true }

  it('refuses only the workloads that mount a network volume where volume sizes are unenforced', async () => {
    expect(await isolationRefusal(docker([VOLUME]), 'member', policy(), NO_VOLUME)).toBeNull()
    expect(await isolationRefusal(docker([VOLUME]), 'member', policy(), mounting)).toBe(
      'not started: this host does not enforce the volume limit (volume: containment.processDisk is none), ' +
        "which only the admin account's workloads may run without; the operator can accept the risk for every account with " +
        'containment.acceptUnenforced: [volume] (docs/security.md)',
    )
    expect(await isolationRefusal(docker([VOLUME]), 'admin', policy(), mounting)).toBeNull()
    expect(
      await isolationRefusal(docker([VOLUME]), 'member', policy(['volume']), mounting),
    ).toBeNull()
  })

  it("refuses a volume on a data center's shared storage on any host, naming the data center", async () => {
    const shared = { mountsVolume: true, sharedStorageOf: 'EU-RO-1' }
    const refusal = await isolationRefusal(docker([]), 'member', policy(), shared)
    expect(refusal).toMatch(
      /^not started: this host does not enforce the volume limit \(volume: the network volumes of data center EU-RO-1 are directories on its shared storage \(networkVolumeRoot\), which no host bounds/,
    )
    // One entry per limit: the shared storage's reason, not the host's as well.
    expect(await isolationRefusal(docker([VOLUME, PIDS]), 'member', policy(), shared)).toMatch(
      /does not enforce the volume, pids limits \(volume: the network volumes of data center EU-RO-1 [^;]*; pids: /,
    )
    expect(await isolationRefusal(docker([]), 'member', policy(['volume']), shared)).toBeNull()
    expect(await hostIsolationReason(docker([]), 'member', policy(), shared)).toMatch(
      /^does not enforce the volume limit \(volume: the network volumes of data center EU-RO-1/,
    )
  })
})
