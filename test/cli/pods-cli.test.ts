import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'

describe('podyard pods', () => {
  let platform: TestPlatform
  const pods = (...args: string[]) =>
    runCli(['pods', ...args, '--url', platform.url, '--api-key', TEST_ADMIN_KEY])

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  // About ten CLI processes and two waits for RUNNING: a budget for a loaded machine.
  it(
    'creates a pod and waits for RUNNING with progress, then lists, reads logs, stops, starts and terminates it',
    { timeout: 120_000 },
    async () => {
      const created = await pods(
        'create',
        '--name',
        'cli-pod',
        '--image',
        'busybox',
        '--cpu',
        'cpu3c',
        '--vcpus',
        '2',
        '--args',
        'echo hello from the pod; sleep 600',
        '--env',
        'A=1',
        '--wait',
        '--json',
      )
      expect(created.code, created.stderr).toBe(0)
      const pod = JSON.parse(created.stdout) as {
        id: string
        status: string
        env: Record<string, string>
      }
      expect(pod).toMatchObject({ status: 'RUNNING', env: { A: '1' } })
      expect(created.stderr).toMatch(
        new RegExp(`^(${pod.id} (PROVISIONING|STARTING)\\n)+${pod.id} RUNNING\\n$`),
      )

      const table = await pods('list')
      expect(table.stdout).toMatch(/^ID\s+NAME\s+STATUS\s+COMPUTE/)
      expect(table.stdout).toMatch(
        new RegExp(`${pod.id}\\s+cli-pod\\s+RUNNING\\s+cpu3c 2 vCPU 4 GB`),
      )

      const detail = await pods('get', pod.id)
      expect(detail.stdout).toMatch(/status\s+RUNNING/)

      await expect
        .poll(async () => (await pods('logs', pod.id)).stdout, { timeout: 10_000 })
        .toBe('hello from the pod\n')
      const system = await pods('logs', pod.id, '--source', 'system')
      expect(system.stdout).toMatch(/created; placed on host/)

      const stopped = await pods('stop', pod.id, '--json')
      expect(JSON.parse(stopped.stdout)).toMatchObject({ status: 'EXITED', cost: 0 })
      const started = await pods('start', pod.id, '--wait')
      expect(started.code, started.stderr).toBe(0)
      expect(started.stdout).toMatch(/status\s+RUNNING/)

      const terminated = await pods('terminate', pod.id)
      expect(terminated.stdout).toBe(`Terminated ${pod.id}.\n`)
      const after = await pods('get', pod.id, '--json')
      expect(JSON.parse(after.stdout)).toMatchObject({ status: 'TERMINATED' })
    },
  )

  it('explains a refused create and a failed wait', async () => {
    const refused = await pods(
      'create',
      '--name',
      'x',
      '--image',
      'y',
      '--gpu',
      'NVIDIA GeForce RTX 5090',
      '--gpu-count',
      '5',
    )
    expect(refused.code).toBe(5)
    expect(refused.stderr).toMatch(/409 Conflict: no host has 5 free NVIDIA GeForce RTX 5090/)
    const failing = await pods(
      'create',
      '--name',
      'x',
      '--image',
      'y',
      '--cpu',
      'cpu3c',
      '--args',
      'exit 4',
      '--wait',
    )
    expect(failing.code).toBe(1)
    expect(failing.stderr).toMatch(/is ERROR: the process exited with code 4 while starting/)
  })
})
