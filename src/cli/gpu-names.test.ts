import { describe, expect, it } from 'vitest'
import { resolveGpuType } from './gpu-names.js'

const TYPES = [
  { id: 'NVIDIA GeForce RTX 4090', name: 'RTX 4090' },
  { id: 'NVIDIA GeForce RTX 4080', name: 'RTX 4080' },
  { id: 'NVIDIA GeForce RTX 4080 SUPER', name: 'RTX 4080 SUPER' },
  { id: 'NVIDIA H100 80GB HBM3', name: 'H100 SXM' },
  { id: 'NVIDIA H100 PCIe', name: 'H100 PCIe' },
  { id: 'NVIDIA L4', name: 'L4' },
]

describe('resolveGpuType', () => {
  it('takes an id as it is', () => {
    expect(resolveGpuType('NVIDIA L4', TYPES)).toBe('NVIDIA L4')
  })

  it('takes a display name, or an id, in any case and spacing', () => {
    expect(resolveGpuType('RTX 4090', TYPES)).toBe('NVIDIA GeForce RTX 4090')
    expect(resolveGpuType('rtx4090', TYPES)).toBe('NVIDIA GeForce RTX 4090')
    expect(resolveGpuType('h100-sxm', TYPES)).toBe('NVIDIA H100 80GB HBM3')
    expect(resolveGpuType('nvidia geforce rtx 4080 super', TYPES)).toBe(
      'NVIDIA GeForce RTX 4080 SUPER',
    )
  })

  it('names the types that contain an ambiguous name', () => {
    expect(() => resolveGpuType('H100', TYPES)).toThrow(
      'ambiguous GPU type "H100"; did you mean: NVIDIA H100 80GB HBM3 (H100 SXM), NVIDIA H100 PCIe (H100 PCIe)?',
    )
  })

  it('suggests the nearest ids for a typo', () => {
    expect(() => resolveGpuType('RTX 4900', TYPES)).toThrow(
      /^unknown GPU type "RTX 4900"; did you mean: NVIDIA GeForce RTX 4090 \(RTX 4090\), NVIDIA GeForce RTX 4080 \(RTX 4080\)/,
    )
  })
})
