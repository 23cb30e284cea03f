import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import {
  callJson,
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { createSdkWorkerEndpoint, endpointWorkersWhen } from '../support/sdk-worker-endpoints.js'

/**
 * Pools and placement constraints over HTTP, as member accounts on the process driver
 * (docs/fleet.md, "Pools and labels"): the admin labels hosts (fleet file and admin routes)
 * and binds accounts to pools; a host in a pool takes only the pods and workers of accounts
 * bound to it; pods and endpoints ask for labels with hostLabels; a refusal is a 409 naming
 * the unmet constraint.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const L4 = 'NVIDIA L4'
const A40 = 'NVIDIA A40'

const FLEET = `
dataCenters:
  - { id: EU-RO-1, name: EU Romania 1, region: EUROPE }
hosts:
  - id: team-a-1
    dataCenterId: EU-RO-1
    gpu: { typeId: ${L4}, count: 2 }
    cpuFlavors: [cpu3c]
    vcpus: 8
    memoryGb: 32
    labels: { pool: team-a }
  - id: open-1
    dataCenterId: EU-RO-1
    gpu: { typeId: ${A40}, count: 2 }
    vcpus: 8
    memoryGb: 32
    labels: { ib: 'true', driver: '535' }
localHost: false
`

describe('pools and placement constraints', () => {
  let platform: TestPlatform
  let teamKey: string
  let teamId: string
  let otherKey: string
  let otherId: string

  const bind = async (accountId: string, pools: string[]) => {
    const { status, body } = await callJson(platform, `/v2/admin/accounts/${accountId}/pools`, {
      method: 'PUT',
      json: { pools },
    })
    expect(status, JSON.stringify(body)).toBe(200)
    return body
  }
  const createPod = (key: string, name: string, gpu: string, extra: Json = {}) =>
    callJson(platform, '/v2/pods', {
      method: 'POST',
      key,
      json: { name, image: 'busybox', args: 'sleep 600', gpu: { id: gpu, count: 1 }, ...extra },
    })
  const podsOnHost = async (hostId: string) =>
    ((await callJson(platform, `/v2/admin/hosts/${hostId}`)).body.pods as Json[]).map((p) => p.id)
  const terminate = (key: string, id: string) =>
    callJson(platform, `/v2/pods/${id}`, { method: 'DELETE', key })

  beforeAll(async () => {
    platform = await startTestPlatform(
      {
        sandbox: 'none',
        workers: {
          intervalMs: 200,
          pingIntervalMs: 1000,
          heartbeatTimeoutMs: 5000,
          startTimeoutMs: 30_000,
          stopGraceMs: 2000,
        },
      },
      { fleetYaml: FLEET },
    )
    teamKey = await otherAccountKey(platform, 'team-a@example.com')
    teamId = (await callJson(platform, '/v2/account', { key: teamKey })).body.id
    otherKey = await otherAccountKey(platform, 'other@example.com')
    otherId = (await callJson(platform, '/v2/account', { key: otherKey })).body.id
  }, 60_000)
  afterAll(async () => {
    await platform?.close()
  })

  it('shows the fleet file labels and changes runtime hosts labels through the admin routes', async () => {
    const declared = await callJson(platform, '/v2/admin/hosts/open-1')
    expect(declared.body.labels).toEqual({ driver: '535', ib: 'true' })

    const added = await callJson(platform, '/v2/admin/hosts', {
      method: 'POST',
      json: {
        id: 'runtime-1',
        dataCenterId: 'EU-RO-1',
        cpuFlavors: ['cpu3c'],
        vcpus: 4,
        memoryGb: 8,
        labels: { pool: 'team-b', driver: '550' },
      },
    })
    expect(added.status, JSON.stringify(added.body)).toBe(201)
    expect(added.body.labels).toEqual({ driver: '550', pool: 'team-b' })

    const patched = await callJson(platform, '/v2/admin/hosts/runtime-1', {
      method: 'PATCH',
      json: { labels: { driver: '560', pool: null, ib: 'true' } },
    })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body.labels).toEqual({ driver: '560', ib: 'true' })

    const diff = await callJson(platform, '/v2/admin/fleet/diff', {
      method: 'POST',
      json: {
        hosts: [
          {
            id: 'runtime-1',
            dataCenterId: 'EU-RO-1',
            cpuFlavors: ['cpu3c'],
            vcpus: 4,
            memoryGb: 8,
            labels: { ib: 'true' },
          },
        ],
      },
    })
    expect(diff.status, JSON.stringify(diff.body)).toBe(200)
    expect(diff.body.changes).toEqual([
      {
        action: 'update',
        hostId: 'runtime-1',
        fields: ['labels: {"driver":"560","ib":"true"} -> {"ib":"true"}'],
      },
    ])

    const bad = await callJson(platform, '/v2/admin/hosts/runtime-1', {
      method: 'PATCH',
      json: { labels: { 'Not A Key': 'x' } },
    })
    expect(bad.status).toBe(422)
    expect(bad.body.detail).toMatch(/is not a label key/)

    const removed = await callJson(platform, '/v2/admin/hosts/runtime-1', { method: 'DELETE' })
    expect(removed.status).toBe(204)
  })

  it('keeps a pool host for the accounts bound to its pool', async () => {
    // Only the admin binds accounts to pools, and a member cannot read them.
    const refused = await callJson(platform, `/v2/admin/accounts/${otherId}/pools`, {
      method: 'PUT',
      key: otherKey,
      json: { pools: ['team-a'] },
    })
    expect(refused.status).toBe(403)

    const outsider = await createPod(otherKey, 'outsider', L4)
    expect(outsider.status, JSON.stringify(outsider.body)).toBe(409)
    expect(outsider.body.detail).toBe(
      `no host in pool team-a is open to this account (it is bound to no pool), and no other host offers ${L4} in the SECURE cloud`,
    )
    // Unbound, the team's account is refused the same way.
    expect((await createPod(teamKey, 'early', L4)).status).toBe(409)

    expect(await bind(teamId, ['team-a'])).toEqual({ accountId: teamId, pools: ['team-a'] })
    expect((await callJson(platform, `/v2/admin/accounts/${teamId}/pools`)).body.pools).toEqual([
      'team-a',
    ])
    const member = await createPod(teamKey, 'member', L4)
    expect(member.status, JSON.stringify(member.body)).toBe(201)
    expect(await podsOnHost('team-a-1')).toContain(member.body.id)

    // GraphQL answers the same refusal in errors[].
    const graphql = await callJson(platform, '/graphql', {
      method: 'POST',
      key: otherKey,
      json: {
        query: `mutation { podFindAndDeployOnDemand(input: { name: "gql", imageName: "busybox", gpuTypeId: "${L4}", gpuCount: 1, cloudType: ALL, containerDiskInGb: 5, dockerArgs: "sleep 600" }) { id } }`,
      },
    })
    expect(graphql.body.errors?.[0]?.message, JSON.stringify(graphql.body)).toMatch(
      /no host in pool team-a is open to this account/,
    )
    await terminate(teamKey, member.body.id)
  }, 30_000)

  it("counts a pool host's GPUs in the catalog's stock only for the accounts bound to it", async () => {
    // The team's account is bound to team-a by now; the other account to no pool.
    const restStock = async (key: string) =>
      (await callJson(platform, `/v2/catalog/gpus/${encodeURIComponent(L4)}`, { key })).body
        .availability
    expect(await restStock(teamKey)).toBe('HIGH')
    expect(await restStock(otherKey)).toBe('NONE')
    const listed = await callJson(platform, '/v2/catalog/gpus', { key: otherKey })
    expect(listed.body.gpus.find((g: Json) => g.id === L4)?.availability).toBe('NONE')
    expect(listed.body.gpus.find((g: Json) => g.id === A40)?.availability).toBe('HIGH')

    const query = `{ gpuTypes(input: { id: "${L4}" }) { id lowestPrice(input: { gpuCount: 1 }) { stockStatus availableGpuCounts } } }`
    const graphqlStock = async (key: string | null) =>
      (
        await callJson(platform, '/graphql', {
          method: 'POST',
          key,
          json: { query },
        })
      ).body.data.gpuTypes[0].lowestPrice
    expect(await graphqlStock(teamKey)).toEqual({ stockStatus: 'High', availableGpuCounts: [1, 2] })
    // Offered (not null), with no stock for an account the pool is closed to, or for no key.
    expect(await graphqlStock(otherKey)).toEqual({ stockStatus: 'None', availableGpuCounts: [] })
    expect(await graphqlStock(null)).toEqual({ stockStatus: 'None', availableGpuCounts: [] })
  })

  it("counts no stock in GraphQL's lowestPrice on a cordoned host", async () => {
    const query = `{ gpuTypes(input: { id: "${A40}" }) { lowestPrice(input: { gpuCount: 1 }) { stockStatus availableGpuCounts } } }`
    const lowest = async () =>
      (await callJson(platform, '/graphql', { method: 'POST', key: otherKey, json: { query } }))
        .body.data.gpuTypes[0].lowestPrice
    expect(await lowest()).toEqual({ stockStatus: 'High', availableGpuCounts: [1, 2] })
    await callJson(platform, '/v2/admin/hosts/open-1/cordon', { method: 'POST' })
    try {
      expect(await lowest()).toEqual({ stockStatus: 'None', availableGpuCounts: [] })
    } finally {
      await callJson(platform, '/v2/admin/hosts/open-1/uncordon', { method: 'POST' })
    }
  })

  it('places a pod only on a host with the labels it asks for', async () => {
    const unmet = await createPod(otherKey, 'newer-driver', A40, {
      hostLabels: ['ib=true', 'driver>=550'],
    })
    expect(unmet.status, JSON.stringify(unmet.body)).toBe(409)
    expect(unmet.body.detail).toBe(
      `no host has driver>=550 among the hosts offering ${A40} in the SECURE cloud`,
    )

    const missing = await createPod(otherKey, 'nvlink', A40, { hostLabels: ['nvlink=true'] })
    expect(missing.status).toBe(409)
    expect(missing.body.detail).toBe(
      `no host has nvlink=true among the hosts offering ${A40} in the SECURE cloud`,
    )

    const invalid = await createPod(otherKey, 'invalid', A40, { hostLabels: ['driver>=new'] })
    expect(invalid.status).toBe(422)
    expect(invalid.body.detail).toBe(
      'hostLabels: "driver>=new": >= compares numbers, and "new" is not one',
    )

    const met = await createPod(otherKey, 'infiniband', A40, {
      hostLabels: ['ib=true', 'driver>=530'],
    })
    expect(met.status, JSON.stringify(met.body)).toBe(201)
    expect(met.body.hostLabels).toEqual(['ib=true', 'driver>=530'])
    expect(await podsOnHost('open-1')).toContain(met.body.id)

    // The extension through GraphQL, unmet: errors[] names it.
    const graphql = await callJson(platform, '/graphql', {
      method: 'POST',
      key: otherKey,
      json: {
        query: `mutation { podFindAndDeployOnDemand(input: { name: "gql", imageName: "busybox", gpuTypeId: "${A40}", gpuCount: 1, cloudType: SECURE, containerDiskInGb: 5, dockerArgs: "sleep 600", hostLabels: ["ib=false"] }) { id } }`,
      },
    })
    expect(graphql.body.errors?.[0]?.message, JSON.stringify(graphql.body)).toMatch(
      /no host has ib=false among the hosts offering NVIDIA A40/,
    )

    // Without the field (as RunPod's clients send it), the open host takes the pod as before.
    const plain = await createPod(otherKey, 'plain', A40)
    expect(plain.status, JSON.stringify(plain.body)).toBe(201)
    expect(plain.body.hostLabels).toBeUndefined()
    for (const id of [met.body.id, plain.body.id]) await terminate(otherKey, id)
  }, 30_000)

  it("launches an endpoint's workers only on hosts of pools its account is bound to", async () => {
    await bind(otherId, [])
    const created = await createSdkWorkerEndpoint(platform, otherKey, 'pool-workers')
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const until = (done: (workers: Json[]) => boolean) =>
      endpointWorkersWhen(platform, otherKey, created.body.id, done)
    // The one cpu3c host is team-a's: the worker waits, saying why (a worker just added says
    // "waiting for a host with room" until its first launch attempt tells the reason).
    const poolRefusal = /no host in pool team-a is open to this account \(it is bound to no pool\)/
    const throttled = await until((ws) =>
      ws.some((w) => w.status === 'THROTTLED' && poolRefusal.test(w.reason ?? '')),
    )
    expect(throttled.map((w) => w.reason).join(' ')).toMatch(poolRefusal)

    await bind(otherId, ['team-a'])
    const launched = await until((ws) =>
      ws.some((w) => w.status === 'IDLE' || w.status === 'RUNNING'),
    )
    expect(
      launched.some((w) => w.status === 'IDLE' || w.status === 'RUNNING'),
      JSON.stringify(launched),
    ).toBe(true)
    await callJson(platform, `/v2/serverless/${created.body.id}`, {
      method: 'DELETE',
      key: otherKey,
    })
  }, 60_000)

  it("launches an endpoint's workers only on hosts with the labels it asks for", async () => {
    const created = await createSdkWorkerEndpoint(platform, otherKey, 'labelled-workers', {
      hostLabels: ['ib=true'],
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body.hostLabels).toEqual(['ib=true'])
    const until = (done: (workers: Json[]) => boolean) =>
      endpointWorkersWhen(platform, otherKey, created.body.id, done)
    // A worker just added says "waiting for a host with room" until its first launch attempt.
    const labelRefusal = 'no host has ib=true among the hosts offering CPU flavor cpu3c'
    const throttled = await until((ws) =>
      ws.some((w) => w.status === 'THROTTLED' && String(w.reason).includes(labelRefusal)),
    )
    expect(throttled.map((w) => w.reason).join(' ')).toContain(labelRefusal)
    const patched = await callJson(platform, `/v2/serverless/${created.body.id}`, {
      method: 'PATCH',
      key: otherKey,
      json: { hostLabels: ['pool=team-a'] },
    })
    expect(patched.status, JSON.stringify(patched.body)).toBe(200)
    expect(patched.body.hostLabels).toEqual(['pool=team-a'])
    const launched = await until((ws) =>
      ws.some((w) => w.status === 'IDLE' || w.status === 'RUNNING'),
    )
    expect(
      launched.some((w) => w.status === 'IDLE' || w.status === 'RUNNING'),
      JSON.stringify(launched),
    ).toBe(true)

    // New labels its host does not have: the worker there is stale and stopped, and its
    // replacement waits for a host that has them, saying why.
    const moved = await callJson(platform, `/v2/serverless/${created.body.id}`, {
      method: 'PATCH',
      key: otherKey,
      json: { hostLabels: ['pool=team-a', 'driver>=999'] },
    })
    expect(moved.status, JSON.stringify(moved.body)).toBe(200)
    expect(moved.body.version).toBe(patched.body.version + 1)
    const replaced = await until(
      (ws) =>
        !ws.some((w) => w.status === 'IDLE' || w.status === 'RUNNING') &&
        ws.some((w) => w.status === 'THROTTLED' && /driver>=999/.test(w.reason ?? '')),
    )
    expect(
      replaced.filter((w) => w.status === 'IDLE' || w.status === 'RUNNING'),
      JSON.stringify(replaced),
    ).toEqual([])
    expect(replaced.map((w) => w.reason).join(' ')).toContain('no host has driver>=999')
    await callJson(platform, `/v2/serverless/${created.body.id}`, {
      method: 'DELETE',
      key: otherKey,
    })

    // GraphQL's saveEndpoint takes the extension too.
    const saved = await callJson(platform, '/graphql', {
      method: 'POST',
      key: otherKey,
      json: {
        query: `mutation { saveEndpoint(input: { name: "gql-labelled", template: { imageName: "podyard/test-worker" }, instanceIds: ["cpu3c-2-4"], workersMin: 0, workersMax: 0, hostLabels: ["driver>=550"] }) { id } }`,
      },
    })
    const id = saved.body.data?.saveEndpoint?.id
    expect(id, JSON.stringify(saved.body)).toBeTruthy()
    const rest = await callJson(platform, `/v2/serverless/${id}`, { key: otherKey })
    expect(rest.body.hostLabels).toEqual(['driver>=550'])
    await callJson(platform, `/v2/serverless/${id}`, { method: 'DELETE', key: otherKey })
  }, 60_000)

  it('labels hosts and binds accounts to pools from the CLI', async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const add = await runCli([
      'hosts',
      'add',
      'cli-labelled',
      '--data-center',
      'EU-RO-1',
      '--vcpus',
      '4',
      '--memory-gb',
      '8',
      '--cpu-flavors',
      'cpu3c',
      '--label',
      'pool=team-c',
      '--label',
      'ib=true',
      ...flags,
    ])
    expect(add.stderr).toBe('')
    const update = await runCli([
      'hosts',
      'update',
      'cli-labelled',
      '--label',
      'driver=550',
      '--unlabel',
      'ib',
      ...flags,
    ])
    expect(update.stderr).toBe('')
    const get = await runCli(['hosts', 'get', 'cli-labelled', ...flags])
    expect(get.stdout).toContain('labels      driver=550,pool=team-c')
    const list = await runCli(['hosts', 'list', ...flags])
    expect(list.stdout).toMatch(/cli-labelled .*driver=550,pool=team-c/)

    await bind(otherId, ['team-a'])
    const bound = await runCli(['pools', 'bind', 'other@example.com', 'team-c', 'team-d', ...flags])
    expect(bound.stderr).toBe('')
    expect(bound.stdout.trim()).toBe(`account ${otherId}: pools team-a, team-c, team-d`)
    const unbound = await runCli(['pools', 'unbind', otherId, 'team-d', 'team-a', ...flags])
    expect(unbound.stdout.trim()).toBe(`account ${otherId}: pools team-c`)
    const shown = await runCli(['pools', 'show', otherId, ...flags])
    expect(shown.stdout.trim()).toBe(`account ${otherId}: pools team-c`)

    const asOther = ['--url', platform.url, '--api-key', otherKey]
    const unmet = await runCli([
      'pods',
      'create',
      '--name',
      'cli-labels',
      '--image',
      'busybox',
      '--gpu',
      A40,
      '--host-label',
      'nvlink=true',
      ...asOther,
    ])
    expect(unmet.code).not.toBe(0)
    expect(unmet.stderr).toContain(`no host has nvlink=true among the hosts offering ${A40}`)

    const member = await otherAccountKey(platform, 'cli-member@example.com')
    const refused = await runCli([
      'pools',
      'show',
      otherId,
      '--url',
      platform.url,
      '--api-key',
      member,
    ])
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain('only the admin account may read or bind pools')
    expect(
      (await callJson(platform, '/v2/admin/hosts/cli-labelled', { method: 'DELETE' })).status,
    ).toBe(204)
  }, 60_000)
})
