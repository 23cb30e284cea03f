import { describe, expect, it } from 'vitest'
import type { Allocation } from '../../domain/catalog/capacity.js'
import { place, type PlacementRequest } from './placement.js'
import {
  A40,
  alloc,
  cpu,
  cpuHost,
  DATA_CENTERS,
  dc,
  failed,
  gpu,
  gpuHost,
  H100,
  MI300X,
  placeChecked,
  placed,
  reasonOf,
  RTX4090,
  run,
} from '../../../test/support/placement-fixtures.js'

describe('place: GPU pods', () => {
  it('places on a host of the type with the GPU share of vCPUs and memory', () => {
    const host = gpuHost('h1', 'US-KS-2', H100, 8)
    expect(placed(run([host], gpu(H100, 2, { diskGb: 80 })))).toEqual({
      hostId: 'h1',
      dataCenterId: 'US-KS-2',
      gpuIndices: [0, 1],
      vcpus: 32,
      memoryGb: 128,
      diskGb: 80,
    })
  })

  it('takes the lowest free GPU indices of the host', () => {
    const host = gpuHost('h1', 'US-KS-2', H100, 8)
    const taken = [alloc(host, [0, 2]), alloc(host, [3])]
    expect(placed(run([host], gpu(H100, 3), taken)).gpuIndices).toEqual([1, 4, 5])
  })

  it('leaves out GPUs withdrawn for their health, keeping their CPU share for others', () => {
    const host = gpuHost('h1', 'US-KS-2', H100, 2)
    const other = gpuHost('h2', 'US-KS-2', H100, 2)
    const withdrawnGpus = { h1: [0] }
    const snapshot = {
      hosts: [host, other],
      dataCenters: DATA_CENTERS,
      allocations: [],
      withdrawnGpus,
    }
    expect(placed(placeChecked(snapshot, gpu(H100, 1, { pinnedHostId: 'h1' }))).gpuIndices).toEqual(
      [1],
    )
    const result = failed(placeChecked(snapshot, gpu(H100, 2, { pinnedHostId: 'h1' })))
    expect(reasonOf(result, 'h1')).toBe(`has only 1 free ${H100}`)
    // Both of h1's GPUs withdrawn: a two-GPU pod goes to h2.
    const both = { ...snapshot, withdrawnGpus: { h1: [0, 1] } }
    expect(placed(placeChecked(both, gpu(H100, 2))).hostId).toBe('h2')
  })

  it('fits exactly enough free GPUs and refuses one short', () => {
    const host = gpuHost('h1', 'US-KS-2', H100, 4)
    const taken = [alloc(host, [0])]
    expect(placed(run([host], gpu(H100, 3), taken)).gpuIndices).toEqual([1, 2, 3])

    const result = failed(run([host], gpu(H100, 4), taken))
    expect(result.rejections).toEqual([{ hostId: 'h1', reason: `has only 3 free ${H100}` }])
    expect(result.detail).toBe(`no host has 4 free ${H100}`)
  })

  it('says when a host has no free GPU, and when it has too few in all', () => {
    const full = gpuHost('full', 'US-KS-2', H100, 2)
    const small = gpuHost('small', 'US-KS-2', H100, 2)
    const result = run([full, small], gpu(H100, 3), [alloc(full, [0, 1])])
    expect(reasonOf(result, 'full')).toBe(`has only 2 ${H100} in all`)
    expect(reasonOf(result, 'small')).toBe(`has only 2 ${H100} in all`)

    const none = run([full], gpu(H100, 1), [alloc(full, [0, 1])])
    expect(reasonOf(none, 'full')).toBe(`has no free ${H100}`)
  })

  it('refuses idle GPUs whose share of vCPUs or memory went to CPU pods', () => {
    const host = gpuHost('h1', 'US-KS-2', H100, 2, { cpuFlavors: ['cpu3c'] })
    // 32 vCPUs, 128 GB; 1 GPU's share is 16 vCPUs and 64 GB.
    const cpuPod = alloc(host, [], { vcpus: 17, memoryGb: 10 })
    const lowCpu = run([host], gpu(H100, 1), [cpuPod])
    expect(reasonOf(lowCpu, 'h1')).toBe(
      `has 1 free ${H100} but not their share of vCPUs: needs 16, 15 free`,
    )
    expect(failed(lowCpu).detail).toBe(
      `no host has 1 free ${H100} and their share of vCPUs and memory`,
    )

    const memPod = alloc(host, [], { vcpus: 2, memoryGb: 65 })
    expect(reasonOf(run([host], gpu(H100, 1), [memPod]), 'h1')).toBe(
      `has 1 free ${H100} but not their share of memory: needs 64 GB, 63 GB free`,
    )

    const exact = alloc(host, [], { vcpus: 16, memoryGb: 64 })
    expect(placed(run([host], gpu(H100, 1), [exact])).hostId).toBe('h1')
  })

  it('rejects hosts of another GPU type and CPU-only hosts', () => {
    const result = run(
      [gpuHost('a40', 'US-KS-2', A40, 4), cpuHost('c1', 'US-KS-2', ['cpu3c'], 32, 64)],
      gpu(H100, 1),
    )
    expect(failed(result).rejections).toEqual([
      { hostId: 'a40', reason: `has ${A40}, not ${H100}` },
      { hostId: 'c1', reason: `has no GPUs, not ${H100}` },
    ])
  })

  it('matches the cloud, and either cloud when none is asked', () => {
    const secure = gpuHost('s', 'US-KS-2', RTX4090, 2)
    const community = gpuHost('c', 'US-KS-2', RTX4090, 4, { cloud: 'COMMUNITY' })
    expect(placed(run([secure, community], gpu(RTX4090, 1, { cloud: 'COMMUNITY' }))).hostId).toBe(
      'c',
    )
    expect(placed(run([secure, community], gpu(RTX4090, 1))).hostId).toBe('s')

    const result = run([secure], gpu(RTX4090, 1, { cloud: 'COMMUNITY' }))
    expect(reasonOf(result, 's')).toBe('is in the SECURE cloud, not COMMUNITY')
    expect(failed(result).detail).toBe(`no host has 1 free ${RTX4090} in the COMMUNITY cloud`)
  })

  describe('CUDA', () => {
    const host = (cudaVersion: string) =>
      gpuHost('h1', 'US-KS-2', H100, 2, { gpu: { typeId: H100, count: 2, cudaVersion } })

    it('accepts a host at the minimum and refuses one below it', () => {
      expect(placed(run([host('12.4')], gpu(H100, 1, { minCudaVersion: '12.4' }))).hostId).toBe(
        'h1',
      )
      const result = run([host('12.3')], gpu(H100, 1, { minCudaVersion: '12.4' }))
      expect(reasonOf(result, 'h1')).toBe('has CUDA 12.3, below the minimum 12.4')
      expect(failed(result).detail).toBe(`no host has 1 free ${H100} with CUDA 12.4 or newer`)
    })

    it('compares versions numerically, not as strings', () => {
      expect(placed(run([host('12.0')], gpu(H100, 1, { minCudaVersion: '12' }))).hostId).toBe('h1')
      expect(placed(run([host('12.10')], gpu(H100, 1, { minCudaVersion: '12.9' }))).hostId).toBe(
        'h1',
      )
      expect(failed(run([host('12.9')], gpu(H100, 1, { minCudaVersion: '12.10' }))).ok).toBe(false)
    })

    it('takes only listed versions when a list is given', () => {
      const request = gpu(H100, 1, { cudaVersions: ['12.4', '12.8'] })
      expect(placed(run([host('12.8')], request)).hostId).toBe('h1')
      const result = run([host('12.9')], request)
      expect(reasonOf(result, 'h1')).toBe('has CUDA 12.9, not 12.4 or 12.8')
      expect(failed(result).detail).toBe(`no host has 1 free ${H100} with CUDA 12.4 or 12.8`)
    })

    it('refuses an AMD host when a CUDA version is asked', () => {
      const amd = gpuHost('mi', 'CA-MTL-1', MI300X, 8)
      expect(reasonOf(run([amd], gpu(MI300X, 1, { minCudaVersion: '11.8' })), 'mi')).toBe(
        'has no CUDA, below the minimum 11.8',
      )
      expect(placed(run([amd], gpu(MI300X, 1))).hostId).toBe('mi')
    })
  })

  it('needs the disk to fit: exactly is enough, 1 GB short is not', () => {
    const host = gpuHost('h1', 'US-KS-2', H100, 2, { diskGb: 300 })
    const used = [alloc(host, [0], { diskGb: 200 })]
    expect(placed(run([host], gpu(H100, 1, { diskGb: 100 }), used)).diskGb).toBe(100)

    const result = run([host], gpu(H100, 1, { diskGb: 101 }), used)
    expect(reasonOf(result, 'h1')).toBe('has only 100 GB of free disk, needs 101 GB')
    expect(failed(result).detail).toBe(`no host has 1 free ${H100} and 101 GB of free disk`)
  })
})

describe('place: CPU pods', () => {
  it('places vcpuCount vCPUs with the flavor memory and no GPUs', () => {
    const host = cpuHost('c1', 'US-KS-2', ['cpu3c', 'cpu3g'], 64, 512)
    expect(placed(run([host], cpu('cpu3g', 4, { diskGb: 30 })))).toEqual({
      hostId: 'c1',
      dataCenterId: 'US-KS-2',
      gpuIndices: [],
      vcpus: 4,
      memoryGb: 16,
      diskGb: 30,
    })
  })

  it('uses only hosts offering the flavor', () => {
    const result = run([cpuHost('c1', 'US-KS-2', ['cpu5c'], 64, 512)], cpu('cpu3c', 2))
    expect(reasonOf(result, 'c1')).toBe('does not offer CPU flavor cpu3c')
  })

  it('keeps GPU hosts for GPU pods unless they list the flavor', () => {
    const plain = gpuHost('g1', 'US-KS-2', H100, 8)
    expect(reasonOf(run([plain], cpu('cpu3c', 2)), 'g1')).toBe(
      'is a GPU host that does not offer CPU flavor cpu3c',
    )
    const offering = gpuHost('g2', 'US-KS-2', H100, 8, { cpuFlavors: ['cpu3c'] })
    const placement = placed(run([plain, offering], cpu('cpu3c', 2)))
    expect(placement.hostId).toBe('g2')
    expect(placement.gpuIndices).toEqual([])
  })

  it('needs vcpuCount free vCPUs and vcpuCount * ramGbPerVcpu GB, exactly or more', () => {
    const host = cpuHost('c1', 'US-KS-2', ['cpu3m'], 8, 64)
    expect(placed(run([host], cpu('cpu3m', 8))).memoryGb).toBe(64)

    const cpuShort = run([host], cpu('cpu3m', 4), [alloc(host, [], { vcpus: 5, memoryGb: 0 })])
    expect(reasonOf(cpuShort, 'c1')).toBe('has only 3 free vCPUs, needs 4')

    const memShort = run([host], cpu('cpu3m', 4), [alloc(host, [], { vcpus: 0, memoryGb: 33 })])
    expect(reasonOf(memShort, 'c1')).toBe('has only 31 GB of free memory, needs 32 GB')
  })

  it('names the slot and the candidate data centers when nothing fits', () => {
    const hosts = [
      cpuHost('ks', 'US-KS-2', ['cpu3c'], 2, 64),
      cpuHost('mtl', 'CA-MTL-1', ['cpu3c'], 64, 6),
    ]
    const result = run(hosts, cpu('cpu3c', 4, { dataCenterIds: ['US-KS-2', 'CA-MTL-1'] }))
    expect(failed(result).detail).toBe(
      'no host has 4 free vCPUs of cpu3c (8 GB memory) in US-KS-2, CA-MTL-1',
    )
    expect(failed(result).rejections).toEqual([
      { hostId: 'ks', reason: 'has only 2 free vCPUs, needs 4' },
      { hostId: 'mtl', reason: 'has only 6 GB of free memory, needs 8 GB' },
    ])
  })

  it('needs the disk to fit', () => {
    const host = cpuHost('c1', 'US-KS-2', ['cpu3c'], 8, 64, { diskGb: 20 })
    expect(placed(run([host], cpu('cpu3c', 2, { diskGb: 20 }))).hostId).toBe('c1')
    const result = run([host], cpu('cpu3c', 2, { diskGb: 21 }))
    expect(failed(result).detail).toBe(
      'no host has 2 free vCPUs of cpu3c (4 GB memory) and 21 GB of free disk',
    )
  })

  it('matches the cloud', () => {
    const host = cpuHost('c1', 'US-KS-2', ['cpu3c'], 8, 64)
    expect(reasonOf(run([host], cpu('cpu3c', 2, { cloud: 'COMMUNITY' })), 'c1')).toBe(
      'is in the SECURE cloud, not COMMUNITY',
    )
  })
})

describe('place: data centers and global networking', () => {
  const ks = gpuHost('ks', 'US-KS-2', H100, 8)
  const ro = gpuHost('ro', 'EU-RO-1', H100, 2)
  const mtl = gpuHost('mtl', 'CA-MTL-1', H100, 1)

  it('tries the allowed data centers in their order, the first with a fit wins', () => {
    // ks is a worse fit than ro, but US-KS-2 comes first.
    expect(
      placed(run([ks, ro, mtl], gpu(H100, 1, { dataCenterIds: ['US-KS-2', 'EU-RO-1'] }))).hostId,
    ).toBe('ks')
    expect(
      placed(run([ks, ro, mtl], gpu(H100, 1, { dataCenterIds: ['EU-RO-1', 'US-KS-2'] }))).hostId,
    ).toBe('ro')
    // The first data center has no fit: the next one is used.
    const full = [alloc(ro, [0, 1])]
    expect(
      placed(run([ks, ro], gpu(H100, 1, { dataCenterIds: ['EU-RO-1', 'US-KS-2'] }), full)).hostId,
    ).toBe('ks')
  })

  it('uses every data center, best fit across them, when none is named', () => {
    expect(placed(run([ks, ro, mtl], gpu(H100, 1))).hostId).toBe('mtl')
  })

  it('rejects hosts outside the allowed data centers, skipping unknown ids', () => {
    const result = run([ks, ro], gpu(H100, 4, { dataCenterIds: ['EU-SE-1', 'EU-RO-1'] }))
    expect(reasonOf(result, 'ks')).toBe('is in US-KS-2, not among EU-SE-1, EU-RO-1')
    expect(reasonOf(result, 'ro')).toBe(`has only 2 ${H100} in all`)
    expect(failed(result).detail).toBe(`no host has 4 free ${H100} in EU-RO-1`)
  })

  it('says so when no requested data center exists', () => {
    const result = failed(run([ks], gpu(H100, 1, { dataCenterIds: ['EU-SE-1', 'AP-JP-1'] })))
    expect(result.detail).toBe('no known data center among EU-SE-1, AP-JP-1')
    expect(result.rejections).toHaveLength(1)
  })

  it('rejects a host whose data center the snapshot does not know', () => {
    const stray = gpuHost('stray', 'XX-1', H100, 8)
    expect(reasonOf(run([stray], gpu(H100, 1)), 'stray')).toBe(
      'is in data center XX-1, which is not known',
    )
  })

  it('with global networking uses only data centers that have it', () => {
    expect(placed(run([ks, ro, mtl], gpu(H100, 1, { globalNetworking: true }))).hostId).toBe('ro')
    const result = run([mtl], gpu(H100, 1, { globalNetworking: true }))
    expect(reasonOf(result, 'mtl')).toBe('is in CA-MTL-1, which has no global networking')
    expect(failed(result).detail).toBe(
      `no host has 1 free ${H100} in a data center with global networking`,
    )
  })

  it('names the requested data centers when none has global networking', () => {
    const withSe = [...DATA_CENTERS, dc('EU-SE-1', false)]
    const result = failed(
      run([ks], gpu(H100, 1, { globalNetworking: true, dataCenterIds: ['EU-SE-1'] }), [], withSe),
    )
    expect(result.detail).toBe('no data center with global networking among EU-SE-1')
    const unknown = failed(
      run([ks], gpu(H100, 1, { globalNetworking: true, dataCenterIds: ['CA-MTL-1', 'NOPE'] })),
    )
    expect(unknown.detail).toBe('no data center with global networking among CA-MTL-1, NOPE')
    const nowhere = failed(
      run([mtl], gpu(H100, 1, { globalNetworking: true }), [], [dc('CA-MTL-1', false)]),
    )
    expect(nowhere.detail).toBe('no data center has global networking')
  })

  it('drops requested data centers without global networking from the candidates', () => {
    const result = run(
      [mtl],
      gpu(H100, 1, { globalNetworking: true, dataCenterIds: ['CA-MTL-1', 'US-KS-2'] }),
    )
    expect(failed(result).detail).toBe(`no host has 1 free ${H100} in US-KS-2`)
  })

  it('refuses an AMD GPU with global networking', () => {
    const amd = gpuHost('mi', 'US-KS-2', MI300X, 8)
    const result = run([amd, ks], gpu(MI300X, 1, { globalNetworking: true }))
    expect(failed(result).detail).toBe(
      `GPU type ${MI300X} is not NVIDIA: global networking needs an NVIDIA GPU`,
    )
    expect(reasonOf(result, 'mi')).toBe(
      `has ${MI300X}, which is not NVIDIA: global networking needs an NVIDIA GPU`,
    )
    expect(placed(run([amd], gpu(MI300X, 1))).hostId).toBe('mi')
  })

  it('mentions cloud, CUDA and data centers together in the detail', () => {
    const result = run([ro], gpu(H100, 2, { cloud: 'SECURE', dataCenterIds: ['EU-RO-1'] }), [
      alloc(ro, [0]),
    ])
    expect(failed(result).detail).toBe(`no host has 2 free ${H100} in the SECURE cloud in EU-RO-1`)
  })
})

describe('place: best fit, preference and pinning', () => {
  it('picks the host left with the fewest free GPUs, so large blocks stay whole', () => {
    const big = gpuHost('a-big', 'US-KS-2', H100, 8)
    const small = gpuHost('z-small', 'US-KS-2', H100, 8)
    const taken = [alloc(small, [0, 1, 2, 3, 4, 5])]
    expect(placed(run([big, small], gpu(H100, 2), taken)).hostId).toBe('z-small')
    expect(placed(run([big, small], gpu(H100, 3), taken)).hostId).toBe('a-big')
  })

  it('breaks ties by host id whatever the snapshot order', () => {
    const b = gpuHost('b', 'US-KS-2', H100, 4)
    const a = gpuHost('a', 'US-KS-2', H100, 4)
    expect(placed(run([b, a], gpu(H100, 1))).hostId).toBe('a')
    expect(placed(run([a, b], gpu(H100, 1))).hostId).toBe('a')
  })

  it('picks the CPU host left with the fewest free vCPUs', () => {
    const roomy = cpuHost('a-roomy', 'US-KS-2', ['cpu3c'], 64, 512)
    const tight = cpuHost('z-tight', 'US-KS-2', ['cpu3c'], 8, 512)
    expect(placed(run([roomy, tight], cpu('cpu3c', 4))).hostId).toBe('z-tight')
  })

  it('prefers the preferred host whenever it fits, over best fit and data center order', () => {
    const ks = gpuHost('ks', 'US-KS-2', H100, 8)
    const ro = gpuHost('ro', 'EU-RO-1', H100, 1)
    const request = gpu(H100, 1, { dataCenterIds: ['EU-RO-1', 'US-KS-2'], preferredHostId: 'ks' })
    expect(placed(run([ks, ro], request)).hostId).toBe('ks')
  })

  it('ignores the preferred host when it does not fit or is not allowed', () => {
    const ks = gpuHost('ks', 'US-KS-2', H100, 8)
    const ro = gpuHost('ro', 'EU-RO-1', H100, 8)
    const full = [alloc(ks, [0, 1, 2, 3, 4, 5, 6, 7])]
    expect(placed(run([ks, ro], gpu(H100, 1, { preferredHostId: 'ks' }), full)).hostId).toBe('ro')
    const elsewhere = gpu(H100, 1, { preferredHostId: 'ks', dataCenterIds: ['EU-RO-1'] })
    expect(placed(run([ks, ro], elsewhere)).hostId).toBe('ro')
    expect(placed(run([ks, ro], gpu(H100, 1, { preferredHostId: 'gone' }))).hostId).toBe('ks')
  })

  it('places a pinned pod only on its host', () => {
    const pinned = gpuHost('us-ks-2-h100-1', 'US-KS-2', H100, 8)
    const better = gpuHost('other', 'US-KS-2', H100, 1)
    const request = gpu(H100, 1, { pinnedHostId: 'us-ks-2-h100-1' })
    expect(placed(run([pinned, better], request)).hostId).toBe('us-ks-2-h100-1')
  })

  it('names the pinned host and what it lacks when it is full', () => {
    const pinned = gpuHost('us-ks-2-h100-1', 'US-KS-2', H100, 8)
    const other = gpuHost('other', 'US-KS-2', H100, 8)
    const taken = [alloc(pinned, [0, 1, 2, 3, 4, 5, 6])]
    const result = failed(
      run([pinned, other], gpu(H100, 2, { pinnedHostId: 'us-ks-2-h100-1' }), taken),
    )
    expect(result.detail).toBe(
      `host us-ks-2-h100-1 (where the pod's persistent volume lives) has only 1 free ${H100}`,
    )
    expect(result.rejections).toEqual([
      { hostId: 'us-ks-2-h100-1', reason: `has only 1 free ${H100}` },
      {
        hostId: 'other',
        reason: "is not host us-ks-2-h100-1, where the pod's persistent volume lives",
      },
    ])
  })

  it('names the pinned host when it is outside the allowed data centers or gone', () => {
    const pinned = gpuHost('h1', 'CA-MTL-1', H100, 8)
    const outside = failed(
      run([pinned], gpu(H100, 1, { pinnedHostId: 'h1', dataCenterIds: ['US-KS-2'] })),
    )
    expect(outside.detail).toBe(
      "host h1 (where the pod's persistent volume lives) is in CA-MTL-1, not among US-KS-2",
    )
    const gone = failed(run([pinned], gpu(H100, 1, { pinnedHostId: 'h9' })))
    expect(gone.detail).toBe(
      "host h9 (where the pod's persistent volume lives) is not in the fleet",
    )
  })
})

describe('place: malformed requests', () => {
  const hosts = [gpuHost('h1', 'US-KS-2', H100, 8), cpuHost('c1', 'US-KS-2', ['cpu3c'], 8, 64)]

  it.each<[string, PlacementRequest, string]>([
    ['unknown GPU type', gpu('RTX 9999', 1), 'unknown GPU type "RTX 9999"'],
    ['unknown CPU flavor', cpu('cpu9x', 2), 'unknown CPU flavor "cpu9x"'],
    ['zero GPUs', gpu(H100, 0), 'invalid request: gpuCount must be a positive integer, got 0'],
    [
      'fractional vCPUs',
      cpu('cpu3c', 1.5),
      'invalid request: vcpuCount must be a positive integer, got 1.5',
    ],
    [
      'negative disk',
      gpu(H100, 1, { diskGb: -1 }),
      'invalid request: diskGb must be a number >= 0, got -1',
    ],
  ])('returns a detail instead of throwing: %s', (_name, request, detail) => {
    expect(run(hosts, request)).toEqual({ ok: false, detail, rejections: [] })
  })

  it('fails cleanly on an empty fleet', () => {
    expect(place({ hosts: [], dataCenters: [], allocations: [] }, gpu(H100, 1))).toEqual({
      ok: false,
      detail: `no host has 1 free ${H100}`,
      rejections: [],
    })
  })
})

describe('host requirements: vCPU and memory minimums, compliance', () => {
  const hosts = [
    gpuHost('small', 'US-KS-2', A40, 4, { vcpus: 32, memoryGb: 128 }),
    gpuHost('large', 'EU-RO-1', A40, 4, { vcpus: 64, memoryGb: 512 }),
  ]
  const dataCenters = [
    dc('US-KS-2', true),
    { ...dc('EU-RO-1', true), compliance: ['GDPR', 'ISO_IEC_27001'] },
  ]
  const request = (extra: Partial<PlacementRequest>): PlacementRequest => ({
    compute: { kind: 'gpu', gpuTypeId: A40, gpuCount: 1 },
    dataCenterIds: [],
    globalNetworking: false,
    diskGb: 10,
    ...extra,
  })
  const run = (extra: Partial<PlacementRequest>) =>
    placeChecked({ hosts, dataCenters, allocations: [] }, request(extra))

  it('places where the GPUs come with at least the vCPUs and memory asked for, at the edge', () => {
    // small gives one A40 8 vCPUs and 32 GB; large gives 16 vCPUs and 128 GB.
    expect(run({ minVcpus: 8, minMemoryGb: 32, dataCenterIds: ['US-KS-2'] })).toMatchObject({
      ok: true,
      placement: { hostId: 'small' },
    })
    expect(run({ minVcpus: 9 })).toMatchObject({
      ok: true,
      placement: { hostId: 'large', vcpus: 16 },
    })
    expect(run({ minMemoryGb: 33 })).toMatchObject({ ok: true, placement: { hostId: 'large' } })
    const none = run({ minVcpus: 17 })
    expect(none).toMatchObject({
      ok: false,
      detail: `no host has 1 free ${A40} with at least 17 vCPUs`,
    })
    expect(none.ok === false && none.rejections).toEqual([
      { hostId: 'small', reason: `gives 1 ${A40} only 8 vCPUs and 32 GB of memory` },
      { hostId: 'large', reason: `gives 1 ${A40} only 16 vCPUs and 128 GB of memory` },
    ])
    expect(run({ minVcpus: 1, minMemoryGb: 200 })).toMatchObject({
      ok: false,
      detail: `no host has 1 free ${A40} with at least 1 vCPUs and 200 GB of memory`,
    })
  })

  it('places only in data centers holding every certification asked for', () => {
    expect(run({ compliance: ['GDPR'] })).toMatchObject({
      ok: true,
      placement: { hostId: 'large' },
    })
    expect(run({ compliance: ['GDPR', 'HIPAA'] })).toMatchObject({
      ok: false,
      detail: `no host has 1 free ${A40} in a data center certified GDPR, HIPAA`,
    })
    const result = run({ compliance: ['HIPAA'] })
    expect(result.ok === false && result.rejections[1]).toEqual({
      hostId: 'large',
      reason: 'is in EU-RO-1, which is not certified HIPAA',
    })
  })
})

describe('hosts that take no new placements', () => {
  const a = gpuHost('a', 'US-KS-2', H100, 8)
  const b = gpuHost('b', 'US-KS-2', H100, 2)
  const snapshot = (unavailable: Record<string, string>) => ({
    hosts: [a, b],
    dataCenters: DATA_CENTERS,
    allocations: [] as Allocation[],
    unavailable,
  })

  it('are passed over for the hosts that do', () => {
    const result = placeChecked(snapshot({ b: 'is cordoned' }), gpu(H100, 1))
    // Best fit alone would take b, the smaller host.
    expect(result.ok && result.placement.hostId).toBe('a')
  })

  it('are named when only they could have taken the pod', () => {
    const result = placeChecked(
      snapshot({ a: 'is DOWN since 2026-01-01T00:00:00.000Z: gone', b: 'is draining' }),
      gpu(H100, 1),
    )
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.detail).toBe(
      `no host has 1 free ${H100}: the hosts that would take it take no new pods now ` +
        '(a is DOWN since 2026-01-01T00:00:00.000Z: gone; b is draining)',
    )
    expect(result.rejections).toContainEqual({ hostId: 'b', reason: 'is draining' })
  })

  it('say why a pinned pod cannot go back to its host', () => {
    const result = placeChecked(snapshot({ a: 'is cordoned' }), gpu(H100, 1, { pinnedHostId: 'a' }))
    expect(!result.ok && result.detail).toBe(
      "host a (where the pod's persistent volume lives) is cordoned",
    )
  })

  it('are still reported by what they lack when they would not fit anyway', () => {
    const result = placeChecked(snapshot({ b: 'is cordoned' }), gpu(H100, 3, { pinnedHostId: 'b' }))
    expect(!result.ok && result.detail).toBe(
      `host b (where the pod's persistent volume lives) has only 2 ${H100} in all`,
    )
  })
})
