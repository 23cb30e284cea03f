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
