import { describe, expect, it } from 'vitest'
import {
  MAX_VOLUME_GB,
  MAX_VOLUME_NAME_LENGTH,
  MIN_VOLUME_GB,
  nameProblems,
  shrinkProblem,
  sizeProblems,
} from './network-volume.js'

describe('network volume bounds', () => {
  it('are 10 and 4096 GB (wire-compat §3.3)', () => {
    expect([MIN_VOLUME_GB, MAX_VOLUME_GB]).toEqual([10, 4096])
  })

  it('accept a size at each edge and refuse one past it', () => {
    expect(sizeProblems(MIN_VOLUME_GB)).toEqual([])
    expect(sizeProblems(MAX_VOLUME_GB)).toEqual([])
    expect(sizeProblems(MIN_VOLUME_GB - 1)).toEqual(['size: must be between 10 and 4096 GB, got 9'])
    expect(sizeProblems(MAX_VOLUME_GB + 1)).toEqual([
      'size: must be between 10 and 4096 GB, got 4097',
    ])
  })

  it('refuse sizes that are not whole GB', () => {
    expect(sizeProblems(10.5)).toEqual(['size: must be an integer number of GB, got 10.5'])
    expect(sizeProblems('20')).toEqual(['size: must be an integer number of GB, got "20"'])
  })

  it('accept names of 1 to 191 characters', () => {
    expect(nameProblems('a')).toEqual([])
    expect(nameProblems('a'.repeat(MAX_VOLUME_NAME_LENGTH))).toEqual([])
    expect(nameProblems('')).toEqual(['name: must not be empty'])
    expect(nameProblems('a'.repeat(MAX_VOLUME_NAME_LENGTH + 1))).toEqual([
      'name: must be at most 191 characters, got 192',
    ])
  })

  it('let a size stay or grow, never shrink', () => {
    expect(shrinkProblem(20, 20)).toBeUndefined()
    expect(shrinkProblem(20, 21)).toBeUndefined()
    expect(shrinkProblem(20, 19)).toBe('size cannot shrink from 20 to 19 GB')
  })
})
