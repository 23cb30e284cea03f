import { describe, expect, it } from 'vitest'
import type { WorkloadIsolation } from '../runtime/driver.js'
import type { ContainedLimit } from '../shared/contained-limits.js'
import {
  hostIsolationReason,
  isolationRefusal,
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
    expect(await isolationRefusal(docker([DISK]), 'member', policy())).toBe(
      'not started: this host does not enforce the disk limit (disk: the storage driver overlay2 on extfs does not enforce a container disk size), ' +
        "which only the admin account's workloads may run without; the operator can accept the risk for every account with " +
        'containment.acceptUnenforced: [disk] (docs/security.md)',
    )
  })

  it("lets the admin's workloads run there", async () => {
    expect(await isolationRefusal(docker([DISK]), 'admin', policy())).toBeNull()
  })

  it('lets everyone run where the operator accepted every unenforced limit, and names only the others', async () => {
    expect(await isolationRefusal(docker([DISK]), 'member', policy(['disk']))).toBeNull()
    const refusal = await isolationRefusal(docker([DISK, PIDS]), 'member', policy(['disk']))
    expect(refusal).toMatch(/^not started: this host does not enforce the pids limit \(pids: /)
    expect(refusal).toMatch(/containment\.acceptUnenforced: \[pids\]/)
    expect(await isolationRefusal(docker([DISK, PIDS]), 'member', policy())).toMatch(
      /does not enforce the disk, pids limits .* containment\.acceptUnenforced: \[disk, pids\]/,
    )
  })

  it('refuses nothing for a driver that enforces every limit, or says nothing of them', async () => {
    expect(await isolationRefusal(docker([]), 'member', policy())).toBeNull()
    expect(await isolationRefusal(docker(), 'member', policy())).toBeNull()
  })

  it('phrases the same rule for a list of hosts', async () => {
    expect(await hostIsolationReason(docker([DISK]), 'member', policy())).toBe(
      'does not enforce the disk limit (disk: the storage driver overlay2 on extfs does not enforce a container disk size), ' +
        "which only the admin account's workloads may run without (containment.acceptUnenforced, docs/security.md)",
    )
    expect(await hostIsolationReason(docker([DISK]), 'admin', policy())).toBeNull()
    expect(await hostIsolationReason(docker([DISK]), 'member', policy(['disk']))).toBeNull()
  })
})
