import { describe, expect, it } from 'vitest'
import {
  compareCudaVersions,
  CUDA_VERSIONS,
  findGpuType,
  GPU_POOLS,
  gpuTypeSuggestion,
  GPU_TYPES,
  isCudaVersionSyntax,
  isKnownCudaVersion,
} from './gpu-types.js'
import { DEFAULT_CPU_PRICES, DEFAULT_GPU_PRICES } from './price-table.js'
import { CPU_FLAVORS } from './cpu-flavors.js'

describe('GPU types', () => {
  it('suggests the id a display name or part of a name means, and nothing for a stranger', () => {
    expect(gpuTypeSuggestion('RTX 4090')).toBe(' (did you mean "NVIDIA GeForce RTX 4090"?)')
    expect(gpuTypeSuggestion('h100-sxm')).toBe(' (did you mean "NVIDIA H100 80GB HBM3"?)')
    expect(gpuTypeSuggestion('A100')).toMatch(
      /^ \(did you mean "NVIDIA A100[^"]*"( or "[^"]+"){0,2}\?\)$/,
    )
    expect(gpuTypeSuggestion('RTX 9999')).toBe('')
    expect(gpuTypeSuggestion('  ')).toBe('')
  })

  it('holds every id of the reference table once, with display name and memory', () => {
    expect(GPU_TYPES).toHaveLength(45)
    expect(new Set(GPU_TYPES.map((t) => t.id)).size).toBe(GPU_TYPES.length)
    expect(findGpuType('NVIDIA GeForce RTX 4090')).toEqual({
      id: 'NVIDIA GeForce RTX 4090',
      displayName: 'RTX 4090',
      memoryGb: 24,
      manufacturer: 'NVIDIA',
      pool: 'ADA_24',
    })
    expect(findGpuType('NVIDIA H100 80GB HBM3')).toMatchObject({
      displayName: 'H100 SXM',
      memoryGb: 80,
      pool: 'ADA_80_PRO',
    })
    expect(findGpuType('NVIDIA H200 NVL')).toMatchObject({
      displayName: 'NVIDIA H200 NVL',
      memoryGb: 143,
      pool: null,
    })
    expect(findGpuType('AMD Instinct MI300X OAM')).toMatchObject({
      manufacturer: 'AMD',
      memoryGb: 192,
    })
    expect(findGpuType('RTX 4090')).toBeUndefined()
  })

  it('uses only the pools of the reference, each at least once', () => {
    const used = new Set(GPU_TYPES.flatMap((t) => (t.pool ? [t.pool] : [])))
    expect([...used].sort()).toEqual([...GPU_POOLS].sort())
  })

  it('compares CUDA versions numerically', () => {
    expect(compareCudaVersions('12.10', '12.9')).toBe(1)
    expect(compareCudaVersions('12.9', '12.10')).toBe(-1)
    expect(compareCudaVersions('12', '12.0')).toBe(0)
    expect(compareCudaVersions('13.0', '12.9')).toBe(1)
    expect(compareCudaVersions('11.8', '12')).toBe(-1)
  })

  it('knows the CUDA versions of the reference and the syntax of others', () => {
    expect(CUDA_VERSIONS[0]).toBe('13.0')
    expect(isKnownCudaVersion('12.8')).toBe(true)
    expect(isKnownCudaVersion('12.10')).toBe(false)
    expect(isCudaVersionSyntax('12')).toBe(true)
    expect(isCudaVersionSyntax('12.1')).toBe(true)
    expect(isCudaVersionSyntax('v12')).toBe(false)
  })
})

describe('price table', () => {
  it('prices every GPU type, with a serverless price exactly when it has a pool', () => {
    for (const type of GPU_TYPES) {
      const price = DEFAULT_GPU_PRICES[type.id]
      expect(price, type.id).toBeDefined()
      expect(price!.secure).toBeGreaterThan(0)
      expect(price!.community).toBeGreaterThan(0)
      expect(price!.serverless === null).toBe(type.pool === null)
    }
    expect(DEFAULT_GPU_PRICES['NVIDIA GeForce RTX 4090']).toEqual({
      secure: 0.59,
      community: 0.34,
      serverless: 1.1,
    })
    expect(DEFAULT_GPU_PRICES['NVIDIA H100 80GB HBM3']).toEqual({
      secure: 2.69,
      community: 1.99,
      serverless: 4.18,
    })
  })

  it('prices every CPU flavor per vCPU-hour', () => {
    for (const flavor of CPU_FLAVORS)
      expect(DEFAULT_CPU_PRICES[flavor.id]?.securePerVcpu).toBeGreaterThan(0)
  })
})
