import { describe, expect, it } from 'vitest'
import { demoFleet } from '../catalog/demo-fleet.js'
import type { PodMounts, PodStatus } from './pod.js'
import {
  actionsFor,
  checkAction,
  checkMountsOnCreate,
  costOf,
  envProblems,
  holdsResources,
  hourlyPriceOf,
  patchMounts,
  portProblems,
} from './pod-rules.js'

const gpu = { kind: 'gpu', gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuCount: 2 } as const
const cpu = { kind: 'cpu', flavorId: 'cpu3c', vcpuCount: 4, memoryGb: 8 } as const

describe('pod lifecycle rules', () => {
  it.each<[PodStatus, string[]]>([
    ['PROVISIONING', ['start', 'terminate']],
    ['STARTING', ['stop', 'terminate']],
    ['RUNNING', ['stop', 'restart', 'terminate']],
    ['EXITED', ['start', 'terminate']],
    ['ERROR', ['start', 'terminate']],
    ['TERMINATED', []],
  ])('%s allows %j', (status, actions) => {
    expect(actionsFor(status)).toEqual(actions)
  })

  it('refuses actions not in the list with the valid ones named', () => {
    expect(() => checkAction({ id: 'p1', status: 'EXITED', locked: false }, 'restart')).toThrow(
      'cannot restart pod p1 while it is EXITED; valid actions: start, terminate',
    )
    expect(() => checkAction({ id: 'p1', status: 'TERMINATED', locked: false }, 'start')).toThrow(
      /while it is TERMINATED$/,
    )
    expect(() =>
      checkAction({ id: 'p1', status: 'PROVISIONING', locked: false }, 'start'),
    ).not.toThrow()
  })

  it('allows reset where restart or start is allowed', () => {
    for (const status of ['RUNNING', 'EXITED', 'ERROR', 'PROVISIONING'] as const) {
      expect(() => checkAction({ id: 'p', status, locked: false }, 'reset')).not.toThrow()
    }
    expect(() => checkAction({ id: 'p', status: 'STARTING', locked: false }, 'reset')).toThrow()
  })

  it('a locked pod refuses stop and reset, nothing else', () => {
    const locked = { id: 'p1', status: 'RUNNING', locked: true } as const
    expect(() => checkAction(locked, 'stop')).toThrow(
      'pod p1 is locked: set "locked": false before you stop it',
    )
    expect(() => checkAction(locked, 'reset')).toThrow(/is locked/)
    expect(() => checkAction(locked, 'restart')).not.toThrow()
    expect(() => checkAction(locked, 'terminate')).not.toThrow()
  })

  it('costs its hourly price only while holding resources', () => {
    for (const status of ['PROVISIONING', 'STARTING', 'RUNNING'] as const) {
      expect(holdsResources(status)).toBe(true)
      expect(costOf({ status, hourlyPrice: 1.5 })).toBe(1.5)
    }
    for (const status of ['EXITED', 'ERROR', 'TERMINATED'] as const) {
      expect(costOf({ status, hourlyPrice: 1.5 })).toBe(0)
    }
  })

  it('prices GPUs per cloud and CPUs per vCPU', () => {
    const price = demoFleet.prices.gpus['NVIDIA GeForce RTX 4090']!
    expect(hourlyPriceOf(demoFleet, gpu, 'SECURE')).toBeCloseTo(price.secure! * 2)
    expect(hourlyPriceOf(demoFleet, gpu, 'COMMUNITY')).toBeCloseTo(price.community! * 2)
    expect(hourlyPriceOf(demoFleet, cpu, 'SECURE')).toBeCloseTo(
      demoFleet.prices.cpus.cpu3c!.securePerVcpu * 4,
    )
  })
})

describe('mounts rules', () => {
  const persistent: PodMounts = { persistent: { size: 20, path: '/workspace' } }
  const network: PodMounts = { network: [{ volumeId: 'vol1', path: '/data' }] }

  it('rule 1 and create rule 3: persistent excludes network, and CPU pods', () => {
    expect(() => checkMountsOnCreate({ ...persistent, ...network }, gpu)).toThrow(
      /mutually exclusive/,
    )
    expect(() => checkMountsOnCreate(persistent, cpu)).toThrow(/not allowed on CPU pods/)
    expect(() => checkMountsOnCreate(network, cpu)).not.toThrow()
    expect(() => checkMountsOnCreate(persistent, gpu)).not.toThrow()
  })

  it('rule 3: omitted or {} leaves mounts unchanged', () => {
    expect(patchMounts(persistent, undefined)).toBe(persistent)
    expect(patchMounts(persistent, {})).toBe(persistent)
  })

  it('rule 4: network [] is refused', () => {
    expect(() => patchMounts(network, { network: [] })).toThrow(/cannot be emptied/)
  })

  it('rule 5: a kind not present at create cannot be added', () => {
    expect(() => patchMounts(network, persistent)).toThrow(/persistent cannot be added/)
    expect(() => patchMounts(persistent, network)).toThrow(/network cannot be added/)
    expect(() => patchMounts({}, network)).toThrow(/network cannot be added/)
    expect(() => patchMounts({}, persistent)).toThrow(/persistent cannot be added/)
  })

  it('rule 6: the network volume cannot change, its path can', () => {
    expect(() => patchMounts(network, { network: [{ volumeId: 'vol2', path: '/data' }] })).toThrow(
      'mounts.network[0].volumeId cannot change (it is vol1); only the path can',
    )
    expect(patchMounts(network, { network: [{ volumeId: 'vol1', path: '/elsewhere' }] })).toEqual({
      network: [{ volumeId: 'vol1', path: '/elsewhere' }],
    })
  })

  it('the persistent path changes, its size may grow but not shrink', () => {
    expect(patchMounts(persistent, { persistent: { size: 30, path: '/data' } })).toEqual({
      persistent: { size: 30, path: '/data' },
    })
    expect(() => patchMounts(persistent, { persistent: { size: 10, path: '/workspace' } })).toThrow(
      /cannot shrink/,
    )
  })
})

describe('container field checks', () => {
  it('names bad ports by position', () => {
    expect(portProblems(['8888/http', '22/tcp', '53/udp'])).toEqual([])
    expect(portProblems(['8888', '0/tcp', '65536/tcp', '80/ftp', '22/tcp', '22/tcp'])).toEqual([
      'body.ports[0]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
      'body.ports[1]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
      'body.ports[2]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
      'body.ports[3]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
      'body.ports[5]: port 22 is declared twice',
    ])
    expect(portProblems(['1/tcp', '65535/tcp'])).toEqual([])
  })

  it('names bad env variable names', () => {
    expect(envProblems({ OK_1: 'a', _x: 'b' })).toEqual([])
    expect(envProblems({ '1BAD': 'a', 'HAS-DASH': 'b' })).toEqual([
      'body.env.1BAD: must be a variable name (letters, digits and _, not starting with a digit)',
      'body.env.HAS-DASH: must be a variable name (letters, digits and _, not starting with a digit)',
    ])
  })
})
