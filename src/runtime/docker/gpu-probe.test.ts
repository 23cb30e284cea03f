import { setTimeout as sleep } from 'node:timers/promises'
import Docker from 'dockerode'
import { describe, expect, it } from 'vitest'
import { EngineGpuProbe, GPU_PROBE_LABEL, engineGpusOf } from './gpu-probe.js'

describe('engineGpusOf', () => {
  it("reads the probe container's nvidia-smi output, GPUs and the driver's CUDA version", () => {
    // The output's shape: the CSV query, then the banner line grep kept (a TTY ends lines
    // with CR LF). Written for this test, not recorded from a machine.
    const output =
      '0, GPU-2f6c1b7e-0b1d-4c7a-9d5e-1a2b3c4d5e6f, NVIDIA H200, 143771, 570.124.06\r\n' +
      '| NVIDIA-SMI 570.124.06   Driver Version: 570.124.06   CUDA Version: 12.8     |\r\n'
    expect(engineGpusOf(output, 0)).toEqual({
      gpus: [
        {
          index: 0,
          uuid: 'GPU-2f6c1b7e-0b1d-4c7a-9d5e-1a2b3c4d5e6f',
          name: 'NVIDIA H200',
          typeId: 'NVIDIA H200',
          memoryMib: 143771,
          driverVersion: '570.124.06',
        },
      ],
      cudaVersion: '12.8',
    })
  })

  it('says why when nvidia-smi failed or listed nothing', () => {
    expect(
      engineGpusOf(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\r\n",
        9,
      ),
    ).toEqual({
      gpuProbeError:
        "nvidia-smi in a probe container exited 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    })
    expect(engineGpusOf('', 0)).toEqual({
      gpuProbeError: 'nvidia-smi in a probe container exited 0',
    })
  })
})

const enabled = process.env.PODYARD_TEST_DOCKER === '1'
if (!enabled) console.log('GPU probe container test skipped: set PODYARD_TEST_DOCKER=1')

describe.runIf(enabled)('EngineGpuProbe on an engine without the nvidia runtime', () => {
  it('reports the refusal as the reason, in the background, and leaves no container', async () => {
    const docker = new Docker()
    const serverId = `gpu-probe-test-${process.pid}-${Date.now()}`
    const probe = new EngineGpuProbe(docker, serverId, 'podyard-conformance/plain:1')
    expect(probe.current()).toEqual({
      gpuProbeError: 'not read yet: a probe container is starting',
    })
    let read = probe.current()
    for (
      let i = 0;
      i < 100 && 'gpuProbeError' in read && read.gpuProbeError.startsWith('not read');
      i++
    ) {
      await sleep(100)
      read = probe.current()
    }
    expect(read).toEqual({ gpuProbeError: expect.stringMatching(/nvidia/) })
    expect(probe.uuids()).toBeUndefined()
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${GPU_PROBE_LABEL}=${serverId}`] },
    })
    expect(left).toEqual([])
  })
})
