import { describe, expect, it } from 'vitest'
import { LOCAL_HOST_ID, type Host } from '../catalog/fleet.js'
import type { HostStateRecord, ProbeOutcome } from './host-state.js'
import { engineTwins } from './host-twins.js'

function host(id: string, simulated = false): Host {
  return {
    id,
    dataCenterId: 'EU-RO-1',
    cloud: 'SECURE',
    gpu: { typeId: 'NVIDIA L4', count: 2, cudaVersion: '12.8' },
    vcpus: 16,
    memoryGb: 64,
    diskGb: 500,
    driver: 'docker',
    cpuFlavors: [],
    simulated,
  }
}

function answered(engineId?: string): ProbeOutcome {
  return {
    ok: true,
    facts: {
      name: 'node',
      ...(engineId ? { engineId } : {}),
      cpus: 16,
      memoryGb: 62.8,
      serverVersion: '27.0.0',
      runtimes: ['nvidia', 'runc'],
    },
  }
}

function up(hostId: string): HostStateRecord {
  const at = '2026-11-29T10:00:00.000Z'
  return {
    hostId,
    state: 'UP',
    reason: null,
    since: at,
    checkedAt: at,
    facts: null,
    warnings: [],
    schedule: 'ACTIVE',
  }
}

const none = () => undefined

describe('engineTwins', () => {
  it('leaves hosts with engines of their own alone', () => {
    const hosts = [host('a'), host('b')]
    expect(engineTwins(hosts, [answered('E1'), answered('E2')], none)).toEqual(new Map())
  })

  it('names the host listed first as the keeper of an engine two real hosts report', () => {
    const hosts = [host('a'), host('b'), host('c')]
    const twins = engineTwins(hosts, [answered('E1'), answered('E2'), answered('E1')], none)
    expect([...twins.keys()]).toEqual(['c'])
    expect(twins.get('c')).toMatch(/^its engine is host a's \(engine id E1\): .*sold twice/)
  })

  it('lets the host that was UP keep the engine, whatever the order', () => {
    const hosts = [host('added-later'), host('running')]
    const previous = (id: string) => (id === 'running' ? up(id) : undefined)
    const twins = engineTwins(hosts, [answered('E1'), answered('E1')], previous)
    expect([...twins.keys()]).toEqual(['added-later'])
    expect(twins.get('added-later')).toContain("host running's")
  })

  it('lets the local host keep this machine when neither was UP, though the fleet lists it last', () => {
    const hosts = [host('named-again'), host(LOCAL_HOST_ID)]
    const twins = engineTwins(hosts, [answered('E1'), answered('E1')], none)
    expect([...twins.keys()]).toEqual(['named-again'])
  })

  it('leaves out simulated hosts, hosts that did not answer and engines without an id', () => {
    const hosts = [host('real'), host('sim-1', true), host('sim-2', true), host('down'), host('x')]
    const outcomes: ProbeOutcome[] = [
      answered('E1'),
      answered('E1'),
      answered('E1'),
      { ok: false, reason: 'no answer' },
      answered(),
    ]
    expect(engineTwins(hosts, outcomes, none)).toEqual(new Map())
  })
})
