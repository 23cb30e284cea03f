import { describe, expect, it } from 'vitest'
import type { Host } from '../catalog/fleet.js'
import {
  declaredVersusReported,
  hostLostAt,
  hostLostReason,
  nextHostState,
  unplaceableReason,
  type HostFacts,
} from './host-state.js'

const host: Host = {
  id: 'gpu-node-2',
  dataCenterId: 'EU-RO-1',
  cloud: 'SECURE',
  gpu: { typeId: 'NVIDIA L4', count: 2, cudaVersion: '12.8' },
  vcpus: 16,
  memoryGb: 64,
  diskGb: 500,
  driver: 'docker',
  cpuFlavors: [],
  simulated: false,
}
const facts: HostFacts = {
  name: 'gpu-node-2',
  cpus: 16,
  memoryGb: 62.8,
  serverVersion: '27.0.0',
  runtimes: ['nvidia', 'runc'],
}
const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-01-01T00:00:05.000Z'
const T2 = '2026-01-01T00:00:10.000Z'

describe('nextHostState', () => {
  it('goes DOWN only after the failures in a row it takes, and UP at the first answer', () => {
    const up = nextHostState(host, undefined, { ok: true, facts }, 0, 2, T0)
    expect(up).toMatchObject({ state: 'UP', since: T0, reason: null, warnings: [] })
    const once = nextHostState(
      host,
      { ...up, schedule: 'ACTIVE' },
      { ok: false, reason: 'x' },
      1,
      2,
      T1,
    )
    expect(once).toMatchObject({ state: 'UP', since: T0, checkedAt: T1 })
    const down = nextHostState(
      host,
      { ...once, schedule: 'ACTIVE' },
      { ok: false, reason: 'gone' },
      2,
      2,
      T2,
    )
    expect(down).toMatchObject({ state: 'DOWN', since: T2, reason: 'gone', facts })
    const still = nextHostState(
      host,
      { ...down, schedule: 'ACTIVE' },
      { ok: false, reason: 'gone' },
      3,
      2,
      T2,
    )
    expect(still.since).toBe(T2)
  })

  it('takes a host never seen answering for DOWN at its first failure', () => {
    expect(nextHostState(host, undefined, { ok: false, reason: 'no' }, 1, 3, T0).state).toBe('DOWN')
  })
})

describe('declaredVersusReported', () => {
  it('warns of declared NVIDIA GPUs without the nvidia runtime, and of too many vCPUs or GB', () => {
    expect(declaredVersusReported(host, facts)).toEqual([])
    expect(
      declaredVersusReported(host, { ...facts, runtimes: ['runc'], cpus: 8, memoryGb: 31.3 }),
    ).toEqual([
      'declares 2 × NVIDIA L4 but its engine has no nvidia runtime: GPUs not offered',
      'declares 16 vCPUs, its engine has 8: offers 8',
      'declares 64 GB of memory, its engine has 31.3 GB: offers 31 GB',
    ])
    expect(
      declaredVersusReported({ ...host, simulated: true }, { ...facts, runtimes: ['runc'] }),
    ).toEqual([])
  })
})

describe('reasons', () => {
  it('say why a host takes no new pods', () => {
    const record = {
      ...nextHostState(host, undefined, { ok: true, facts }, 0, 2, T0),
      schedule: 'ACTIVE' as const,
    }
    expect(unplaceableReason(record)).toBeUndefined()
    expect(unplaceableReason({ ...record, schedule: 'CORDONED' })).toBe('is cordoned')
    expect(unplaceableReason({ ...record, state: 'DOWN', reason: 'gone' })).toBe(
      `is DOWN since ${T0}: gone`,
    )
    expect(unplaceableReason({ ...record, state: 'UNKNOWN' })).toBe('has not been probed yet')
  })

  it("read a lost pod's host loss back from its status reason", () => {
    const reason = hostLostReason('gpu-node-2', T0, 'ssh://x: connection refused')
    expect(reason).toBe(`host gpu-node-2 lost at ${T0} (ssh://x: connection refused)`)
    expect(hostLostAt(reason, 'gpu-node-2')).toBe(T0)
    expect(hostLostAt(reason, 'gpu-node-1')).toBeUndefined()
    expect(hostLostAt('the process exited', 'gpu-node-2')).toBeUndefined()
  })
})
