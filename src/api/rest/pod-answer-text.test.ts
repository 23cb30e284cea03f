import { describe, expect, it } from 'vitest'
import type { Pod, PodRuntime } from '../../domain/pods/pod.js'
import { podAnswerText, podView } from './pod-routes.js'

const pod: Pod = {
  id: 'pod1',
  accountId: 'acct',
  name: 'p',
  image: 'img',
  args: '',
  disk: 10,
  ports: ['8080/http', '22/tcp'],
  env: { MINE: '1' },
  registry: null,
  compute: { kind: 'gpu', gpuTypeId: 'NVIDIA L4', gpuCount: 2 },
  mounts: { persistent: { size: 20, path: '/workspace' } },
  cloud: 'SECURE',
  dataCenterIds: [],
  dataCenterId: 'EU-RO-1',
  hostId: 'h1',
  templateId: null,
  locked: false,
  globalNetworking: true,
  globalIp: '10.0.0.2',
  status: 'RUNNING',
  statusReason: null,
  hourlyPrice: 1,
  gpuIndices: [1, 3],
  portMappings: [{ private: 22, public: 40022, type: 'tcp' }],
  generation: 4,
  crashRestarts: 0,
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: '2026-01-01T00:00:05.000Z',
  lastStatusChange: '2026-01-01T00:00:05.000Z',
  terminatedAt: null,
  version: 3,
}

const runtimeAt = (uptime: number, ip = '203.0.113.7'): PodRuntime => ({
  uptime,
  gpus: [
    { util: 10, memoryUtil: 20 },
    { util: 0, memoryUtil: 0 },
  ],
  ports: [{ private: 22, public: 40022, type: 'tcp', ip }],
})

/** What the answer was before it was kept per pod: the whole view serialized. */
const plain = (p: Pod, runtime: PodRuntime | null, cuda: string | null) =>
  JSON.stringify(podView(p, runtime, cuda))

describe('PodAnswerText', () => {
  it('answers the text of the whole view, read after read, as the live parts move', () => {
    const answers = podAnswerText()
    for (const uptime of [1, 2, 3]) {
      const runtime = runtimeAt(uptime)
      expect(answers.text({ pod, runtime, cudaVersion: '12.4' })).toBe(plain(pod, runtime, '12.4'))
    }
    // The port's address changes the ssh block, which is live too.
    const moved = runtimeAt(4, '198.51.100.9')
    const text = answers.text({ pod, runtime: moved, cudaVersion: '12.4' })
    expect(text).toBe(plain(pod, moved, '12.4'))
    expect(JSON.parse(text).ssh.direct.host).toBe('198.51.100.9')
    expect(answers.text({ pod, runtime: null, cudaVersion: '12.4' })).toBe(plain(pod, null, '12.4'))
  })

  it('follows every write of the pod (its version), its status, its host and CUDA version', () => {
    const answers = podAnswerText()
    const runtime = runtimeAt(1)
    answers.text({ pod, runtime, cudaVersion: '12.4' })
    const renamed = { ...pod, name: 'renamed', version: pod.version + 1 }
    expect(answers.text({ pod: renamed, runtime, cudaVersion: '12.4' })).toBe(
      plain(renamed, runtime, '12.4'),
    )
    const stopped = { ...renamed, status: 'EXITED' as const }
    expect(answers.text({ pod: stopped, runtime: null, cudaVersion: '12.4' })).toBe(
      plain(stopped, null, '12.4'),
    )
    expect(answers.text({ pod: renamed, runtime, cudaVersion: '12.8' })).toBe(
      plain(renamed, runtime, '12.8'),
    )
  })

  it('is not misled by stored strings that look like its stand-ins', () => {
    const answers = podAnswerText()
    const tricky = {
      ...pod,
      env: { ssh: '\u0000ssh-', runtime: '"\u0000runtime-"', NUL: '\u0000' },
      name: '"ssh":null,"runtime":null',
    }
    const runtime = runtimeAt(7)
    expect(answers.text({ pod: tricky, runtime, cudaVersion: null })).toBe(
      plain(tricky, runtime, null),
    )
    expect(answers.text({ pod: tricky, runtime: runtimeAt(8), cudaVersion: null })).toBe(
      plain(tricky, runtimeAt(8), null),
    )
  })

  it('keeps a bounded number of pods', () => {
    const answers = podAnswerText()
    for (let i = 0; i < 10_050; i++) {
      const other = { ...pod, id: `pod-${i}` }
      answers.text({ pod: other, runtime: null, cudaVersion: null })
    }
    expect((answers as unknown as { entries: Map<string, unknown> }).entries.size).toBe(10_000)
  })
})
