import { describe, expect, it } from 'vitest'
import { findCpuFlavor } from '../../domain/catalog/cpu-flavors.js'
import { isAppError } from '../../shared/app-error.js'
import { cpuDeployRequest, gpuDeployRequest, parsePorts } from './pod-input.js'

const ram = (id: string) => findCpuFlavor(id)?.ramGbPerVcpu
const cpu3c2 = () => ({ flavorId: 'cpu3c', vcpuCount: 2 })

function problemsOf(run: () => unknown): string[] | undefined {
  try {
    run()
  } catch (error) {
    if (isAppError(error)) return error.errors ?? [error.detail]
    throw error
  }
  return undefined
}

describe('GraphQL pod inputs -> create requests', () => {
  it('maps the common input fields', () => {
    expect(
      gpuDeployRequest({
        name: 'n',
        imageName: 'img',
        gpuTypeId: 'G',
        gpuCount: 2,
        cloudType: 'COMMUNITY',
        containerDiskInGb: 20,
        volumeInGb: 30,
        volumeMountPath: '/data',
        dockerArgs: 'sleep 1',
        ports: '8888/http, 22/tcp,',
        env: [{ key: 'A', value: 'b' }, { key: 'C', value: null }, null],
        containerRegistryAuthId: 'reg',
        dataCenterId: 'US-KS-2',
        templateId: 't',
        minVcpuCount: 4,
        minMemoryInGb: 8,
        allowedCudaVersions: ['12.4', null],
        globalNetwork: true,
      }),
    ).toEqual({
      pod: {
        name: 'n',
        image: 'img',
        args: 'sleep 1',
        disk: 20,
        ports: ['8888/http', '22/tcp'],
        env: { A: 'b', C: '' },
        registry: 'reg',
        dataCenterIds: ['US-KS-2'],
        templateId: 't',
        startSsh: true,
        gpu: { id: 'G', count: 2 },
        mounts: { persistent: { size: 30, path: '/data' } },
        globalNetworking: true,
      },
      clouds: ['COMMUNITY'],
      constraints: {
        minVcpuCount: 4,
        minMemoryInGb: 8,
        cudaVersions: ['12.4'],
        minCudaVersion: undefined,
        compliance: [],
      },
    })
  })

  it('treats "" as not given, ALL or absent as both clouds, and small volumes as the minimum', () => {
    const request = gpuDeployRequest({
      imageName: 'img',
      gpuTypeId: 'G',
      dockerArgs: '',
      ports: '',
      volumeMountPath: '',
      volumeInGb: 1,
    })
    expect(request.pod).toEqual({
      name: 'img',
      image: 'img',
      startSsh: true,
      gpu: { id: 'G', count: 1 },
      mounts: { persistent: { size: 10, path: '/workspace' } },
    })
    expect(request.clouds).toEqual(['SECURE', 'COMMUNITY'])
    expect(gpuDeployRequest({ imageName: 'i', gpuTypeId: 'G', cloudType: 'ALL' }).clouds).toEqual([
      'SECURE',
      'COMMUNITY',
    ])
    expect(
      gpuDeployRequest({ imageName: 'i', gpuTypeId: 'G', volumeInGb: 0 }).pod.mounts,
    ).toBeUndefined()
  })

  it('prefers a network volume over volumeInGb, at volumeMountPath or /workspace', () => {
    expect(
      gpuDeployRequest({ imageName: 'i', gpuTypeId: 'G', volumeInGb: 20, networkVolumeId: 'v' }).pod
        .mounts,
    ).toEqual({ network: [{ volumeId: 'v', path: '/workspace' }] })
  })

  it('names every invalid field', () => {
    expect(
      problemsOf(() =>
        gpuDeployRequest({
          name: 'x'.repeat(192),
          gpuCount: 0,
          containerDiskInGb: 0,
          volumeInGb: -1,
          volumeMountPath: 'rel',
          ports: '70000/http',
          stopAfter: '2026-01-01',
        }),
      ),
    ).toEqual([
      'input.name: must NOT have more than 191 characters',
      'input.imageName: is required unless templateId gives it',
      'input.containerDiskInGb: must be >= 1',
      'input.volumeMountPath: must be an absolute path (start with /)',
      'input.ports[0]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
      'input.stopAfter: is not offered: stop or terminate the pod yourself',
      'input.gpuTypeId: is required: list GPU types with gpuTypes',
      'input.gpuCount: must be >= 1',
      'input.volumeInGb: must be >= 0',
    ])
  })

  it('maps instance ids to a flavor and vCPU count, checking the RAM part', () => {
    expect(
      cpuDeployRequest(
        { instanceId: 'cpu3g-4-16', imageName: 'i', networkVolumeId: 'v' },
        ram,
        cpu3c2,
      ).pod,
    ).toEqual({
      name: 'i',
      image: 'i',
      startSsh: true,
      cpu: { id: 'cpu3g', vcpuCount: 4 },
      mounts: { network: [{ volumeId: 'v', path: '/workspace' }] },
    })
    expect(
      problemsOf(() => cpuDeployRequest({ instanceId: 'cpu3c-1-2', imageName: 'i' }, ram, cpu3c2)),
    ).toEqual(['input.instanceId: cpu3c-1-2: the vCPU count must be a power of two >= 2'])
    expect(
      problemsOf(() => cpuDeployRequest({ instanceId: 'cpu3c', imageName: 'i' }, ram, cpu3c2)),
    ).toEqual(['input.instanceId: "cpu3c" is not <flavor>-<vcpuCount>-<ramGb>, e.g. cpu3c-2-4'])
  })

  it('takes the default instance when there is no instanceId (runpod-python CPU pods)', () => {
    expect(
      cpuDeployRequest({ imageName: 'i', templateId: 'runpod-ubuntu' }, ram, cpu3c2).pod.cpu,
    ).toEqual({ id: 'cpu3c', vcpuCount: 2 })
  })

  it('parses comma-separated ports', () => {
    expect(parsePorts(' 8888/http ,22/tcp,, ')).toEqual(['8888/http', '22/tcp'])
    expect(parsePorts(null)).toEqual([])
  })
})
