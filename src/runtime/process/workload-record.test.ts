import { describe, expect, it } from 'vitest'
import {
  isValidWorkloadId,
  parseExitStatus,
  parseWorkloadRecord,
  type WorkloadRecord,
} from './workload-record.js'

const record: WorkloadRecord = {
  spec: {
    id: 'pod1',
    image: 'img',
    command: null,
    containerDiskPath: '/d',
    diskGb: 1,
    mounts: [],
    ports: [],
    gpuIndices: [],
    vcpus: 1,
    memoryGb: 1,
    labels: { a: 'b' },
  },
  pid: 100,
  pgid: 100,
  processStartTicks: 12345,
  bootId: 'boot',
  sandbox: 'none',
  startedAt: '2026-01-01T00:00:00.000Z',
}

describe('parseWorkloadRecord', () => {
  it('reads back what the driver writes', () => {
    expect(parseWorkloadRecord(JSON.stringify(record))).toEqual(record)
    const stopped = { ...record, stoppedAt: '2026-01-01T00:01:00.000Z', sandbox: 'bubblewrap' }
    expect(parseWorkloadRecord(JSON.stringify(stopped))).toEqual(stopped)
    const unknownTicks = { ...record, processStartTicks: null }
    expect(parseWorkloadRecord(JSON.stringify(unknownTicks))).toEqual(unknownTicks)
    const sandboxed = {
      ...record,
      sandbox: 'bubblewrap',
      user: { uid: 1900000001, gid: 1900000001 },
    }
    expect(parseWorkloadRecord(JSON.stringify(sandboxed))).toEqual(sandboxed)
  })

  it('drops the environment a state.json of an older version still holds', () => {
    const older = { ...record, spec: { ...record.spec, env: { RUNPOD_AI_API_KEY: 'secret' } } }
    expect(parseWorkloadRecord(JSON.stringify(older))).toEqual(record)
  })

  it('refuses broken or foreign files', () => {
    expect(parseWorkloadRecord('{')).toBeUndefined()
    expect(parseWorkloadRecord('[]')).toBeUndefined()
    expect(parseWorkloadRecord(JSON.stringify({ ...record, pid: '100' }))).toBeUndefined()
    expect(parseWorkloadRecord(JSON.stringify({ ...record, spec: { id: 'x' } }))).toBeUndefined()
  })
})

describe('isValidWorkloadId', () => {
  it('accepts ids that are safe directory names only', () => {
    expect(isValidWorkloadId('pod-1_a.b')).toBe(true)
    expect(isValidWorkloadId('abc123xyz')).toBe(true)
    for (const bad of ['', '.', '..', '.hidden', 'a/b', '../x', 'a b', 'x'.repeat(129)]) {
      expect(isValidWorkloadId(bad), bad).toBe(false)
    }
  })
})

describe('parseExitStatus', () => {
  it('reads the number the wrapper wrote; anything else is unknown', () => {
    expect(parseExitStatus('3\n')).toBe(3)
    expect(parseExitStatus('0\n')).toBe(0)
    expect(parseExitStatus(undefined)).toBeNull()
    expect(parseExitStatus('')).toBeNull()
    expect(parseExitStatus('x')).toBeNull()
  })
})
