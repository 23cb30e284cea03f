import { describe, expect, it } from 'vitest'
import {
  CLOCK_TICKS_PER_SECOND,
  cpuPercent,
  cpuSample,
  isGone,
  memoryPercent,
  parsePageSize,
  parseProcStat,
  type ProcStat,
} from './proc-stat.js'

const CAT_STAT =
  '17127 (cat) R 17125 17125 12558 0 -1 4194304 97 0 0 0 7 3 0 0 20 0 1 0 205349 3133440 359 18446744073709551615 94050973978624 0 0 0 0 0 0 0 17 0 0 0 0 0 0'

function stat(pid: number, starttime: number, ticks: number): ProcStat {
  return {
    pid,
    comm: 'x',
    state: 'R',
    ppid: 1,
    pgrp: 10,
    session: 10,
    utime: ticks,
    stime: 0,
    starttime,
    rssPages: 1,
  }
}

describe('parseProcStat', () => {
  it('reads the fields the driver uses by their proc(5) positions', () => {
    expect(parseProcStat(CAT_STAT)).toEqual({
      pid: 17127,
      comm: 'cat',
      state: 'R',
      ppid: 17125,
      pgrp: 17125,
      session: 12558,
      utime: 7,
      stime: 3,
      starttime: 205349,
      rssPages: 359,
    })
  })

  it('finds the fields after a command name with spaces and parentheses', () => {
    const text = CAT_STAT.replace('(cat)', '(my (odd) name) )')
    expect(parseProcStat(text)).toMatchObject({
      comm: 'my (odd) name) ',
      pgrp: 17125,
      starttime: 205349,
    })
  })

  it('refuses text that is not a stat line', () => {
    expect(parseProcStat('')).toBeUndefined()
    expect(parseProcStat('12 (sh) S 1 2')).toBeUndefined()
    expect(parseProcStat('garbage')).toBeUndefined()
  })

  it('counts zombies and dead entries as gone', () => {
    expect(isGone(parseProcStat(CAT_STAT.replace(') R ', ') Z '))!)).toBe(true)
    expect(isGone(parseProcStat(CAT_STAT.replace(') R ', ') X '))!)).toBe(true)
    expect(isGone(parseProcStat(CAT_STAT.replace(') R ', ') S '))!)).toBe(false)
  })
})

describe('cpuPercent', () => {
  const second = CLOCK_TICKS_PER_SECOND

  it('is busy time over wall time over the vCPUs', () => {
    const before = cpuSample(0, [stat(1, 5, 0)])
    expect(cpuPercent(before, cpuSample(1000, [stat(1, 5, second)]), 1)).toBe(100)
    expect(cpuPercent(before, cpuSample(1000, [stat(1, 5, second / 2)]), 1)).toBe(50)
    expect(cpuPercent(before, cpuSample(1000, [stat(1, 5, second)]), 4)).toBe(25)
    expect(cpuPercent(before, cpuSample(2000, [stat(1, 5, second)]), 2)).toBe(25)
  })

  it('adds up the processes of the group and clamps at 100', () => {
    const before = cpuSample(0, [stat(1, 5, 0), stat(2, 5, 0)])
    const after = cpuSample(1000, [stat(1, 5, second), stat(2, 5, second)])
    expect(cpuPercent(before, after, 2)).toBe(100)
    expect(cpuPercent(before, after, 1)).toBe(100)
  })

  it('counts a process that started in between, and a re-used pid as a new process', () => {
    const before = cpuSample(0, [stat(1, 5, 1000)])
    expect(cpuPercent(before, cpuSample(1000, [stat(1, 5, 1000), stat(2, 9, 30)]), 1)).toBe(30)
    expect(cpuPercent(before, cpuSample(1000, [stat(1, 7, 40)]), 1)).toBe(40)
  })

  it('ignores a process that ended in between and never goes below 0', () => {
    const before = cpuSample(0, [stat(1, 5, 500), stat(2, 5, 500)])
    expect(cpuPercent(before, cpuSample(1000, [stat(1, 5, 510)]), 1)).toBe(10)
    expect(cpuPercent(before, cpuSample(1000, []), 1)).toBe(0)
  })

  it('is 0 without elapsed time, and treats vcpus below 1 as 1', () => {
    const before = cpuSample(0, [stat(1, 5, 0)])
    expect(cpuPercent(before, cpuSample(0, [stat(1, 5, 10)]), 1)).toBe(0)
    expect(cpuPercent(before, cpuSample(1000, [stat(1, 5, 20)]), 0)).toBe(20)
  })
})

describe('memoryPercent', () => {
  it('is resident bytes over the GiB allotment, whole and clamped', () => {
    const gib = 1024 ** 3
    expect(memoryPercent(gib / 4, 1)).toBe(25)
    expect(memoryPercent(gib, 4)).toBe(25)
    expect(memoryPercent(3 * gib, 1)).toBe(100)
    expect(memoryPercent(0, 1)).toBe(0)
    expect(memoryPercent(gib, 0)).toBe(0)
  })
})

describe('parsePageSize', () => {
  it('reads KernelPageSize of the first mapping', () => {
    const smaps =
      '55d0-55d1 r--p 00000000 08:01 1 /usr/bin/node\nSize: 4 kB\nKernelPageSize:        4 kB\nMMUPageSize: 4 kB\n'
    expect(parsePageSize(smaps)).toBe(4096)
    expect(parsePageSize(smaps.replace('        4 kB', '       64 kB'))).toBe(65536)
    expect(parsePageSize('')).toBeUndefined()
  })
})
