import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parseRemappedRows, parseXidEvents } from './nvidia-health-sources.js'
import {
  normaliseBusId,
  parseGpuQueryLine,
  troubleThrottleReasons,
  type GpuSample,
} from './nvidia-smi-query.js'

/** A fixture's lines without its `#` header (test/fixtures/nvidia-smi/README.md). */
function fixture(name: string): string {
  const text = readFileSync(
    new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url),
    'utf8',
  )
  return text
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n')
}

function samples(name: string): GpuSample[] {
  return fixture(name)
    .split('\n')
    .map(parseGpuQueryLine)
    .flatMap((l) => (l.kind === 'sample' ? [l.sample] : []))
}

describe('nvidia-smi --query-gpu lines', () => {
  it('reads every field of a busy and an idle H100', () => {
    const [busy, idle] = samples('query-gpu-h100x2-busy.csv')
    expect(busy).toEqual({
      index: 0,
      uuid: 'GPU-5d9a3f4e-8f1c-2b7d-9a64-0c3e1f2a7b10',
      busId: '19:00',
      utilPercent: 97,
      memoryBandwidthPercent: 61,
      memoryUsedMib: 40211,
      memoryTotalMib: 81559,
      temperatureC: 71,
      powerDrawW: 612.48,
      throttleMask: 0x4,
      eccUncorrectedVolatile: 0,
      retiredPagesPending: false,
      lost: false,
    })
    expect(idle?.index).toBe(1)
    expect(idle?.utilPercent).toBe(0)
    // Power cap and idle are normal, not trouble.
    expect(troubleThrottleReasons(busy!.throttleMask)).toEqual([])
    expect(troubleThrottleReasons(idle!.throttleMask)).toEqual([])
  })

  it('reads [N/A] and [Not Supported] as unknown, never as 0', () => {
    const [gpu] = samples('query-gpu-consumer-na.csv')
    expect(gpu?.powerDrawW).toBeNull()
    expect(gpu?.eccUncorrectedVolatile).toBeNull()
    expect(gpu?.retiredPagesPending).toBeNull()
    expect(gpu?.utilPercent).toBe(12)
    expect(gpu?.throttleMask).toBe(0)
    expect(
      parseGpuQueryLine('0, GPU-x, 00000000:01:00.0, [Not Supported], 1, 2, 3, 4, 5, 0x0, 0, No'),
    ).toMatchObject({ kind: 'sample', sample: { utilPercent: null } })
  })

  it('marks a GPU lost, and reads the device-handle error with its bus id', () => {
    const lines = fixture('query-gpu-lost.csv').split('\n').map(parseGpuQueryLine)
    const [first, second, third] = lines
    expect(first).toMatchObject({ kind: 'sample', sample: { index: 0, lost: false } })
    expect(second).toMatchObject({
      kind: 'sample',
      sample: { index: 1, lost: true, uuid: null, utilPercent: null },
    })
    expect(third).toEqual({
      kind: 'unreachable',
      busId: '3B:00',
      message: 'Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error',
    })
  })

  it('reads ECC errors, pending page retirement and thermal throttling', () => {
    const [ecc, hot] = samples('query-gpu-ecc-thermal.csv')
    expect(ecc?.eccUncorrectedVolatile).toBe(2)
    expect(ecc?.retiredPagesPending).toBe(true)
    expect(troubleThrottleReasons(hot!.throttleMask)).toEqual([
      'software thermal slowdown',
      'hardware thermal slowdown',
    ])
  })

  it('ignores lines that are neither a reading nor a GPU failure', () => {
    expect(parseGpuQueryLine('')).toMatchObject({ kind: 'other' })
    expect(
      parseGpuQueryLine('Failed to initialize NVML: Driver/library version mismatch'),
    ).toMatchObject({
      kind: 'other',
    })
    expect(parseGpuQueryLine('x, a, b, 1, 2, 3, 4, 5, 6, 0x0, 0, No')).toMatchObject({
      kind: 'other',
    })
  })

  it('compares bus ids across nvidia-smi and kernel spellings', () => {
    expect(normaliseBusId('00000000:3B:00.0')).toBe('3B:00')
    expect(normaliseBusId('0000:3b:00')).toBe('3B:00')
    expect(normaliseBusId('0000:3b:00.0')).toBe('3B:00')
  })
})

describe('row remapping and XID events', () => {
  it('reads --query-remapped-rows, pending as 0/1 or No/Yes', () => {
    const rows = parseRemappedRows(fixture('remapped-rows.csv'))
    expect(rows).toEqual([
      {
        busId: '19:00',
        uuid: 'GPU-5d9a3f4e-8f1c-2b7d-9a64-0c3e1f2a7b10',
        correctable: 0,
        uncorrectable: 0,
        pending: false,
        failure: false,
      },
      {
        busId: '3B:00',
        uuid: 'GPU-b2c8e0d1-44a9-7c13-e5f2-9d0a6b3c8e21',
        correctable: 0,
        uncorrectable: 1,
        pending: true,
        failure: false,
      },
    ])
    expect(parseRemappedRows('00000000:19:00.0, GPU-a, 0, 0, Yes, No')[0]).toMatchObject({
      pending: true,
      failure: false,
    })
    expect(
      parseRemappedRows('00000000:19:00.0, GPU-a, [N/A], [N/A], [N/A], [N/A]')[0],
    ).toMatchObject({
      pending: null,
      correctable: null,
    })
  })

  it('reads XID events from kernel log lines and skips the rest', () => {
    expect(parseXidEvents(fixture('kernel-xid.txt'))).toEqual([
      {
        busId: '19:00',
        xid: 13,
        detail:
          'pid=40121, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address',
      },
      {
        busId: '3B:00',
        xid: 79,
        detail: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
      },
    ])
  })
})
