import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { GPU_TYPES } from '../domain/catalog/gpu-types.js'
import {
  discoverLocalHost,
  gpuTypeIdFromSmiName,
  localGpusFromSmi,
  parseSmiCudaVersion,
  parseSmiGpuDetails,
  parseSmiGpuList,
} from './host-discovery.js'

describe('gpuTypeIdFromSmiName', () => {
  it('keeps names that already are catalog ids', () => {
    expect(gpuTypeIdFromSmiName('NVIDIA GeForce RTX 4090')).toBe('NVIDIA GeForce RTX 4090')
    expect(gpuTypeIdFromSmiName('NVIDIA H100 80GB HBM3')).toBe('NVIDIA H100 80GB HBM3')
    expect(gpuTypeIdFromSmiName('NVIDIA A100-SXM4-80GB')).toBe('NVIDIA A100-SXM4-80GB')
    expect(gpuTypeIdFromSmiName('Tesla V100-SXM2-32GB')).toBe('Tesla V100-SXM2-32GB')
  })

  it('adds the NVIDIA prefix older drivers leave out, and forgives spacing and case', () => {
    expect(gpuTypeIdFromSmiName('GeForce RTX 3090')).toBe('NVIDIA GeForce RTX 3090')
    expect(gpuTypeIdFromSmiName('A100-SXM4-80GB')).toBe('NVIDIA A100-SXM4-80GB')
    expect(gpuTypeIdFromSmiName('  NVIDIA  GeForce RTX 4080 Super ')).toBe(
      'NVIDIA GeForce RTX 4080 SUPER',
    )
  })

  it('knows every NVIDIA type of the catalog (its copy of the ids must stay in step)', () => {
    // Test files may cross layers; the runtime itself may not import the domain.
    const nvidia = GPU_TYPES.filter((t) => t.manufacturer === 'NVIDIA' && !t.id.includes(' MIG '))
    for (const type of nvidia) {
      const printedByOldDrivers = type.id.replace(/^NVIDIA /, '')
      expect(gpuTypeIdFromSmiName(printedByOldDrivers.toUpperCase()), type.id).toBe(type.id)
    }
  })

  it('maps every H100 and H200 name nvidia-smi prints to its catalog id, never a raw name', () => {
    const hopper: Array<[string, string]> = [
      ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 80GB HBM3'],
      ['H100 80GB HBM3', 'NVIDIA H100 80GB HBM3'],
      ['NVIDIA H100', 'NVIDIA H100 80GB HBM3'],
      ['NVIDIA H100 SXM5 80GB', 'NVIDIA H100 80GB HBM3'],
      ['NVIDIA H100 PCIe', 'NVIDIA H100 PCIe'],
      ['NVIDIA H100 PCIe 80GB', 'NVIDIA H100 PCIe'],
      ['NVIDIA H100 NVL', 'NVIDIA H100 NVL'],
      ['NVIDIA H100 NVL 94GB', 'NVIDIA H100 NVL'],
      ['NVIDIA H200', 'NVIDIA H200'],
      ['NVIDIA H200 141GB HBM3e', 'NVIDIA H200'],
      ['NVIDIA H200 SXM 141GB', 'NVIDIA H200'],
      ['NVIDIA H200 NVL', 'NVIDIA H200 NVL'],
      ['nvidia h200 nvl', 'NVIDIA H200 NVL'],
    ]
    for (const [printed, id] of hopper) {
      expect(gpuTypeIdFromSmiName(printed), printed).toBe(id)
      expect(GPU_TYPES.some((t) => t.id === id)).toBe(true)
    }
    // Other Hopper parts are not H100s or H200s of the catalog.
    expect(gpuTypeIdFromSmiName('NVIDIA H800')).toBe('NVIDIA H800')
    expect(gpuTypeIdFromSmiName('NVIDIA GH200 480GB')).toBe('NVIDIA GH200 480GB')
    expect(gpuTypeIdFromSmiName('NVIDIA H20')).toBe('NVIDIA H20')
  })

  it('returns an unknown name as printed', () => {
    expect(gpuTypeIdFromSmiName('NVIDIA GeForce GTX 1080')).toBe('NVIDIA GeForce GTX 1080')
    expect(gpuTypeIdFromSmiName('NVIDIA GeForce RTX 4090 Laptop GPU')).toBe(
      'NVIDIA GeForce RTX 4090 Laptop GPU',
    )
  })
})

describe('nvidia-smi output', () => {
  it('parses the GPU list', () => {
    const csv = 'NVIDIA GeForce RTX 4090, 24564 MiB\nNVIDIA GeForce RTX 4090, 24564 MiB\n\n'
    expect(parseSmiGpuList(csv)).toEqual([
      { name: 'NVIDIA GeForce RTX 4090', memoryMib: 24564 },
      { name: 'NVIDIA GeForce RTX 4090', memoryMib: 24564 },
    ])
    expect(parseSmiGpuList('')).toEqual([])
    expect(parseSmiGpuList('NVIDIA L4, [N/A]')).toEqual([{ name: 'NVIDIA L4', memoryMib: null }])
  })

  it('reads the CUDA version of the banner', () => {
    const banner =
      '+---------------------------------------------------------------------------------------+\n' +
      '| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |\n'
    expect(parseSmiCudaVersion(banner)).toBe('12.2')
    expect(
      parseSmiCudaVersion('| NVIDIA-SMI 580.65  Driver Version: 580.65  CUDA Version: 13.0 |'),
    ).toBe('13.0')
    expect(parseSmiCudaVersion('no banner')).toBeNull()
  })

  it('counts the run of GPUs of GPU 0 type so device indices stay 0..n-1', () => {
    const a = { name: 'NVIDIA RTX A6000', memoryMib: 49140 }
    const b = { name: 'NVIDIA GeForce RTX 3090', memoryMib: 24576 }
    expect(localGpusFromSmi([a, a, b, a], '12.4')).toEqual({
      typeId: 'NVIDIA RTX A6000',
      count: 2,
      cudaVersion: '12.4',
    })
    expect(localGpusFromSmi([b], null)).toEqual({
      typeId: 'NVIDIA GeForce RTX 3090',
      count: 1,
      cudaVersion: null,
    })
    expect(localGpusFromSmi([], '12.4')).toBeNull()
  })
})

describe('parseSmiGpuDetails', () => {
  it('reads index, UUID, name with its catalog type, memory and driver of every GPU', () => {
    // The shape of `nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version
    // --format=csv,noheader,nounits` (written for this test, not recorded from a machine).
    const csv =
      '0, GPU-2f6c1b7e-0b1d-4c7a-9d5e-1a2b3c4d5e6f, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n' +
      '1, GPU-8a9b0c1d-2e3f-4a5b-6c7d-8e9f0a1b2c3d, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n' +
      '2, GPU-11111111-2222-3333-4444-555555555555, NVIDIA H200 NVL, [N/A], [N/A]\n' +
      'WARNING: infoROM is corrupted at gpu 0000:04:00.0\n\n'
    expect(parseSmiGpuDetails(csv)).toEqual([
      {
        index: 0,
        uuid: 'GPU-2f6c1b7e-0b1d-4c7a-9d5e-1a2b3c4d5e6f',
        name: 'NVIDIA H100 80GB HBM3',
        typeId: 'NVIDIA H100 80GB HBM3',
        memoryMib: 81559,
        driverVersion: '550.54.15',
      },
      {
        index: 1,
        uuid: 'GPU-8a9b0c1d-2e3f-4a5b-6c7d-8e9f0a1b2c3d',
        name: 'NVIDIA H100 80GB HBM3',
        typeId: 'NVIDIA H100 80GB HBM3',
        memoryMib: 81559,
        driverVersion: '550.54.15',
      },
      {
        index: 2,
        uuid: 'GPU-11111111-2222-3333-4444-555555555555',
        name: 'NVIDIA H200 NVL',
        typeId: 'NVIDIA H200 NVL',
        memoryMib: null,
        driverVersion: null,
      },
    ])
    expect(parseSmiGpuDetails('')).toEqual([])
  })
})

describe('discoverLocalHost', () => {
  const originalPath = process.env.PATH
  let dir: string | undefined
  afterEach(() => {
    process.env.PATH = originalPath
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = undefined
  })

  function fakeSmi(script: string): void {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-smi-'))
    const file = path.join(dir, 'nvidia-smi')
    writeFileSync(file, `#!/bin/sh\n${script}\n`)
    chmodSync(file, 0o755)
    process.env.PATH = `${dir}${path.delimiter}${originalPath}`
  }

  it('reads GPUs and the CUDA version from nvidia-smi when it is installed', async () => {
    fakeSmi(
      'if [ "$#" -gt 0 ]; then printf "NVIDIA GeForce RTX 4090, 24564 MiB\\nNVIDIA GeForce RTX 4090, 24564 MiB\\n"; ' +
        'else echo "| NVIDIA-SMI 550.54  Driver Version: 550.54  CUDA Version: 12.4 |"; fi',
    )
    expect((await discoverLocalHost()).gpus).toEqual({
      typeId: 'NVIDIA GeForce RTX 4090',
      count: 2,
      cudaVersion: '12.4',
    })
  })

  it('keeps index, UUID and driver of every GPU where the query gives them', async () => {
    fakeSmi(
      'case "$1" in --query-gpu=index*) ' +
        'echo "0, GPU-2f6c1b7e-0b1d-4c7a-9d5e-1a2b3c4d5e6f, NVIDIA H100 80GB HBM3, 81559, 550.54.15";; ' +
        '"") echo "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |";; ' +
        '*) exit 2;; esac',
    )
    expect((await discoverLocalHost()).gpus).toEqual({
      typeId: 'NVIDIA H100 80GB HBM3',
      count: 1,
      cudaVersion: '12.4',
      details: [
        {
          index: 0,
          uuid: 'GPU-2f6c1b7e-0b1d-4c7a-9d5e-1a2b3c4d5e6f',
          name: 'NVIDIA H100 80GB HBM3',
          typeId: 'NVIDIA H100 80GB HBM3',
          memoryMib: 81559,
          driverVersion: '550.54.15',
        },
      ],
    })
  })

  it('reports no GPUs when nvidia-smi fails', async () => {
    fakeSmi(
      'echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver" >&2; exit 9',
    )
    expect((await discoverLocalHost()).gpus).toBeNull()
  })

  it('reports the CPU, memory and disk of this machine', async () => {
    const facts = await discoverLocalHost()
    expect(facts.vcpus).toBeGreaterThan(0)
    expect(facts.memoryGb).toBeGreaterThanOrEqual(0)
    expect(Number.isInteger(facts.memoryGb)).toBe(true)
    expect(Number.isInteger(facts.diskGb)).toBe(true)
    if (facts.gpus) expect(facts.gpus.count).toBeGreaterThan(0)
  })
})
