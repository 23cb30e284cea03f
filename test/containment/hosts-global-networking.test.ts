import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

/**
 * Global networking in the admin's view of the hosts (GET /v2/admin/hosts, `podyard hosts
 * get`) on the demo fleet: whether each host's data center offers it, the range of the pods'
 * addresses, and the pods on it with global networking, created over HTTP by two member
 * accounts.
 */
interface HostJson {
  id: string
  dataCenterId: string
  globalNetworking: { offered: boolean; subnet: string | null; members: number; accounts: number }
}

describe('global networking in the host view', () => {
  let platform: TestPlatform
  let members: string[] = []
  const hosts = async () =>
    (await json<{ hosts: HostJson[] }>(await platform.call('/v2/admin/hosts'))).hosts
  const createGlobalPod = async (key: string) =>
    (
      await json<{ id: string }>(
        await platform.call('/v2/pods', {
          method: 'POST',
          key,
          json: {
            name: 'global',
            image: 'ubuntu',
            gpu: { id: 'NVIDIA H100 80GB HBM3' },
            globalNetworking: true,
            args: 'sleep 600',
          },
        }),
        201,
      )
    ).id

  beforeAll(async () => {
    platform = await startTestPlatform()
    members = [
      await otherAccountKey(platform, 'global-a@example.com'),
      await otherAccountKey(platform, 'global-b@example.com'),
    ]
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
  })

  it("counts a host's globally networked pods and their accounts; the CLI shows it", async () => {
    const before = await hosts()
    const offering = before.filter((h) => h.globalNetworking.offered)
    expect(offering.length).toBeGreaterThan(0)
    for (const host of before) {
      expect(host.globalNetworking).toEqual({
        offered: host.globalNetworking.offered,
        subnet: host.globalNetworking.offered ? '10.0.0.0/8' : null,
        members: 0,
        accounts: 0,
      })
    }

    const pods = [
      await createGlobalPod(members[0]!),
      await createGlobalPod(members[0]!),
      await createGlobalPod(members[1]!),
    ]
    const after = await hosts()
    const withMembers = after.filter((h) => h.globalNetworking.members > 0)
    expect(withMembers.every((h) => h.globalNetworking.offered)).toBe(true)
    expect(withMembers.reduce((n, h) => n + h.globalNetworking.members, 0)).toBe(3)
    const busiest = withMembers.sort(
      (a, b) => b.globalNetworking.members - a.globalNetworking.members,
    )[0]!
    const { members: count, accounts } = busiest.globalNetworking
    expect(accounts).toBeGreaterThanOrEqual(1)
    expect(accounts).toBeLessThanOrEqual(count)

    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const get = await runCli(['hosts', 'get', busiest.id, ...flags])
    expect(get.code, get.stderr).toBe(0)
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
    expect(get.stdout).toContain(
      `global net  10.0.0.0/8 per account: ${plural(count, 'pod')} of ${plural(accounts, 'account')}`,
    )

    for (const [index, id] of pods.entries()) {
      const key = members[index === 2 ? 1 : 0]!
      expect((await platform.call(`/v2/pods/${id}`, { method: 'DELETE', key })).status).toBe(204)
    }
    expect((await hosts()).every((h) => h.globalNetworking.members === 0)).toBe(true)
  }, 120_000)
})
