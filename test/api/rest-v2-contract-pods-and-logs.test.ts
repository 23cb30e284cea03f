import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'
import { json, logEvents } from '../support/http.js'
import { contractCalls, type Json } from '../support/rest-v2-contract-fixtures.js'

/**
 * Points of RunPod's REST v2 contract (its OpenAPI document, "Frontdoor v2.9.0") that clients
 * following it depend on, on running workloads: the flags and placement requirements of a pod
 * create, and the sources of pod and worker logs. The rest: rest-v2-contract-resources.test.ts.
 */
describe('REST v2 contract points', () => {
  let platform: TestPlatform

  const { call, problem } = contractCalls(() => platform)

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  describe('pod create flags and placement requirements', () => {
    const KEY =
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHn0bGZ0b3J0ZXN0aW5nb25seTAwMDAwMDAwMDAwMDA v2@test'
    const createPod = (body: Json) =>
      call('POST', '/v2/pods', { name: 'flags', image: 'busybox', ...body })
    const logs = async (id: string) =>
      (await platform.call(`/v2/pods/${id}/logs?follow=false&source=container`)).text()
    const podsToDelete: string[] = []
    afterAll(async () => {
      for (const id of podsToDelete) await call('DELETE', `/v2/pods/${id}`)
    })
    const created = async (body: Json) => {
      const pod = await json(await createPod(body), 201)
      podsToDelete.push(String(pod.id))
      return pod
    }

    it('startSsh puts the account keys in PUBLIC_KEY; without it the pod gets none', async () => {
      await json(await call('PUT', '/v2/account/ssh-keys', { keys: [KEY] }))
      const args = 'echo "key=[$PUBLIC_KEY]"; sleep 300'
      const withSsh = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args, startSsh: true })
      const without = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args })
      const own = await created({
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        args,
        startSsh: true,
        env: { PUBLIC_KEY: 'ssh-rsa AAAAB3 mine' },
      })
      // A create-time flag: never returned.
      expect(withSsh).not.toHaveProperty('startSsh')
      expect(withSsh).not.toHaveProperty('startJupyter')
      await expect
        .poll(() => logs(String(withSsh.id)), { timeout: 15_000, interval: 200 })
        .toContain(`key=[${KEY}]`)
      await expect
        .poll(() => logs(String(without.id)), { timeout: 15_000, interval: 200 })
        .toContain('key=[]')
      await expect
        .poll(() => logs(String(own.id)), { timeout: 15_000, interval: 200 })
        .toContain('key=[ssh-rsa AAAAB3 mine]')
      await json(await call('PUT', '/v2/account/ssh-keys', { keys: [] }))
    }, 40_000)

    it('startJupyter puts a generated JUPYTER_PASSWORD in env unless env has one', async () => {
      const generated = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, startJupyter: true })
      expect((generated.env as Json).JUPYTER_PASSWORD).toMatch(/^[A-Za-z0-9]{20}$/)
      const kept = await created({
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        startJupyter: true,
        env: { JUPYTER_PASSWORD: 'mine' },
      })
      expect(kept.env).toEqual({ JUPYTER_PASSWORD: 'mine' })
      const none = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 } })
      expect(none.env).toEqual({})
    })

    it('gpu CUDA versions and per-GPU minimums are placement requirements', async () => {
      const a6000 = (gpu: Json) => createPod({ gpu: { id: 'NVIDIA RTX A6000', ...gpu } })
      const both = await problem(
        await a6000({ allowedCudaVersions: ['12.4'], minCudaVersion: '12.1' }),
        400,
      )
      expect(both.detail).toBe('give gpu.allowedCudaVersions or gpu.minCudaVersion, not both')
      // An explicit [] states no constraint, so it may go with a floor.
      const floor = await json(
        await a6000({ allowedCudaVersions: [], minCudaVersion: '12.1' }),
        201,
      )
      podsToDelete.push(String(floor.id))
      expect((await problem(await a6000({ allowedCudaVersions: ['12.8'] }), 409)).detail).toContain(
        'CUDA 12.8',
      )
      expect((await problem(await a6000({ minCudaVersion: '12.9' }), 409)).detail).toContain(
        'CUDA 12.9 or newer',
      )
      // The demo A6000 host gives each GPU 16 vCPUs and 62 GB.
      await problem(await a6000({ minVcpuCountPerGpu: 17 }), 409)
      await problem(await a6000({ minRamPerGpu: 63 }), 409)
      const fits = await json(
        await a6000({ allowedCudaVersions: ['12.4'], minVcpuCountPerGpu: 16, minRamPerGpu: 62 }),
        201,
      )
      podsToDelete.push(String(fits.id))
      expect(fits.gpu).toEqual({ id: 'NVIDIA RTX A6000', count: 1 })
      // cudaVersion is the CUDA version of the host the pod is placed on (the demo A6000's).
      await expect
        .poll(
          async () => (await json(await call('GET', `/v2/pods/${String(fits.id)}`))).cudaVersion,
          {
            timeout: 10_000,
            interval: 100,
          },
        )
        .toBe('12.4')
      await problem(await a6000({ minCudaVersion: '12' }), 422)
    })

    it('the pod view always has an ssh block, with a direct endpoint when 22/tcp is exposed', async () => {
      const plain = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 } })
      // RunPod's schema requires both keys; a CPU pod has no CUDA version.
      expect(plain).toMatchObject({ ssh: { proxy: null, direct: null }, cudaVersion: null })
      const pod = await created({
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        ports: ['22/tcp'],
        args: 'sleep 300',
      })
      expect(pod.ssh).toEqual({ proxy: null, direct: null })
      let running: Json = {}
      await expect
        .poll(
          async () => {
            running = await json(await call('GET', `/v2/pods/${String(pod.id)}`))
            return running.status
          },
          { timeout: 40_000, interval: 200 },
        )
        .toBe('RUNNING')
      const port = (
        running.runtime as { ports: Array<{ private: number; public: number; ip: string }> }
      ).ports[0]!
      expect(running.ssh).toEqual({
        proxy: null,
        direct: {
          host: port.ip,
          port: port.public,
          username: 'root',
          command: `ssh root@${port.ip} -p ${port.public}`,
        },
      })
    }, 50_000)
  })

  describe('logs: source is container, system or both, and both is the default', () => {
    const events = logEvents

    it('pod logs', async () => {
      const pod = await json(
        await call('POST', '/v2/pods', {
          name: 'logs',
          image: 'busybox',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: 'echo hello-logs; sleep 300',
        }),
        201,
      )
      const path = `/v2/pods/${String(pod.id)}/logs?follow=false`
      let both: ReturnType<typeof events> = []
      await expect
        .poll(
          async () => {
            both = events(await (await platform.call(path)).text())
            // The workload may print before its STARTING is written: wait for both sources to
            // be done with the start, RUNNING being the last line of it.
            return (
              both.some((e) => e.line === 'hello-logs') &&
              both.some((e) => e.source === 'system' && e.line === 'RUNNING')
            )
          },
          { timeout: 20_000, interval: 200 },
        )
        .toBe(true)
      expect(new Set(both.map((e) => e.source))).toEqual(new Set(['container', 'system']))
      expect(both.find((e) => e.source === 'system')!.line).toMatch(/^created; placed/)
      // Each id says where the stream is in both sources.
      for (const e of both) expect(e.id).toMatch(/^[^/]+\/\d+\.\d+$/)
      // Resuming after the last event sends nothing already sent.
      const resumed = await platform.call(path, {
        headers: { 'last-event-id': both[both.length - 1]!.id },
      })
      expect(events(await resumed.text())).toEqual([])
      const container = events(await (await platform.call(`${path}&source=container`)).text())
      expect(container.map((e) => e.source)).toEqual(['container'])
      expect(container[0]!.id).toMatch(/^[^/]+\/\d+$/)
      const system = events(await (await platform.call(`${path}&source=system`)).text())
      expect(new Set(system.map((e) => e.source))).toEqual(new Set(['system']))
      await call('DELETE', `/v2/pods/${String(pod.id)}`)
    }, 30_000)

    it('worker logs have a system source too', async () => {
      const endpoint = await json(
        await call('POST', '/v2/serverless', {
          name: 'worker-logs',
          image: 'podyard/idle',
          args: 'echo worker-output; sleep 300',
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
          workers: { min: 1, max: 1 },
        }),
        201,
      )
      const id = String(endpoint.id)
      let workerId = ''
      await expect
        .poll(
          async () => {
            const list = await json<{ workers: Array<{ id: string }> }>(
              await call('GET', `/v2/serverless/${id}/workers`),
            )
            workerId = list.workers[0]?.id ?? ''
            return workerId
          },
          { timeout: 20_000, interval: 200 },
        )
        .not.toBe('')
      const path = `/v2/serverless/${id}/workers/${workerId}/logs?follow=false`
      let both: ReturnType<typeof events> = []
      await expect
        .poll(
          async () => {
            both = events(await (await platform.call(path)).text())
            return both.some((e) => e.line === 'worker-output')
          },
          { timeout: 20_000, interval: 200 },
        )
        .toBe(true)
      const system = both.filter((e) => e.source === 'system').map((e) => e.line)
      expect(system[0]).toBe('wanted for endpoint version 1')
      expect(system[1]).toMatch(/^placed on host \S+ in \S+; starting version 1$/)
      const onlySystem = events(await (await platform.call(`${path}&source=system`)).text())
      expect(onlySystem.map((e) => e.line)).toEqual(system)
      await call('DELETE', `/v2/serverless/${id}`)
    }, 50_000)
  })
})
