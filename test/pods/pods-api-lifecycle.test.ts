import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../src/shared/clock.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'
import {
  conforming,
  podCalls,
  RTX_4090,
  RTX_5090,
  type PodJson,
} from '../support/pods-api-fixtures.js'
import { until } from '../support/until.js'

/**
 * REST pods through their lives: a real process run, stopped and started again on its host,
 * locks, crashes, PATCH, the container and system logs as server-sent events, and how long a
 * TERMINATED pod stays readable. How pods are created and placed is in pods-api-create.test.ts.
 */

describe('REST pods', () => {
  let platform: TestPlatform

  const { created, getPod, terminate, act, waitFor, availability, problem } = podCalls(
    () => platform,
  )

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('runs a real process through its whole lifecycle', async () => {
    const server = [
      'echo scratch > on-container-disk',
      'test -e "$PODYARD_MOUNT_WORKSPACE/kept" && echo again >> "$PODYARD_MOUNT_WORKSPACE/kept" || echo first > "$PODYARD_MOUNT_WORKSPACE/kept"',
      `exec node -e 'require("http").createServer((q, r) => r.end(JSON.stringify({ env: process.env, kept: require("fs").readFileSync(process.env.PODYARD_MOUNT_WORKSPACE + "/kept", "utf8"), disk: require("fs").readdirSync(".") }))).listen(process.env.RUNPOD_TCP_PORT_8080)'`,
    ].join('\n')
    const pod = await created({
      name: 'web',
      gpu: { id: RTX_5090, count: 2 },
      ports: ['8080/http'],
      env: { GREETING: 'hello' },
      args: server,
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    expect(await availability(RTX_5090)).toBe('NONE')
    const running = await waitFor(pod.id, 'RUNNING')
    expect(running.actions).toEqual(['stop', 'restart', 'terminate'])
    expect(running.startedAt).not.toBeNull()
    expect(running.runtime).toMatchObject({
      uptime: expect.any(Number),
      gpus: [
        { util: 0, memoryUtil: 0 },
        { util: 0, memoryUtil: 0 },
      ],
      ports: [{ private: 8080, public: expect.any(Number), type: 'http', ip: '127.0.0.1' }],
    })
    // Its usage is measured in the background from when it runs: on a read soon after.
    const measured = await until(
      'its usage figures',
      async () => (await getPod(pod.id)).runtime,
      (runtime) => runtime?.cpu !== undefined && runtime.memory !== undefined,
      5000,
    )
    expect(measured).toMatchObject({
      cpu: { util: expect.any(Number) },
      memory: { util: expect.any(Number) },
    })
    const publicPort = running.runtime!.ports[0]!.public
    const first = (await (await fetch(`http://127.0.0.1:${publicPort}/`)).json()) as {
      env: Record<string, string>
      kept: string
    }
    expect(first.env).toMatchObject({
      GREETING: 'hello',
      RUNPOD_POD_ID: pod.id,
      RUNPOD_DC_ID: 'EU-RO-1',
      RUNPOD_GPU_COUNT: '2',
      RUNPOD_PUBLIC_IP: '127.0.0.1',
      RUNPOD_TCP_PORT_8080: String(publicPort),
      CUDA_VISIBLE_DEVICES: '0,1',
      NVIDIA_VISIBLE_DEVICES: '0,1',
    })
    expect(Number(first.env.RUNPOD_CPU_COUNT)).toBeGreaterThan(0)
    expect(first.kept).toBe('first\n')

    const stopped = conforming((await (await act(pod.id, 'stop')).json()) as PodJson)
    expect(stopped).toMatchObject({
      status: 'EXITED',
      cost: 0,
      actions: ['start', 'terminate'],
      runtime: null,
    })
    expect(await availability(RTX_5090)).toBe('HIGH')
    await expect
      .poll(
        () =>
          fetch(`http://127.0.0.1:${publicPort}/`).then(
            () => 'up',
            () => 'gone',
          ),
        { timeout: 15_000 },
      )
      .toBe('gone')
    expect((await problem(await act(pod.id, 'restart'), 409)).detail).toMatch(
      /cannot restart pod .* while it is EXITED/,
    )

    const started = conforming((await (await act(pod.id, 'start')).json()) as PodJson)
    expect(started.status).toBe('PROVISIONING')
    const again = await waitFor(pod.id, 'RUNNING')
    const second = (await (
      await fetch(`http://127.0.0.1:${again.runtime!.ports[0]!.public}/`)
    ).json()) as {
      kept: string
      disk: string[]
    }
    expect(second.kept).toBe('first\nagain\n')
    expect(second.disk).toEqual(['on-container-disk'])

    expect((await terminate(pod.id)).status).toBe(204)
    const gone = await getPod(pod.id)
    expect(gone).toMatchObject({ status: 'TERMINATED', actions: [], cost: 0 })
    expect((await problem(await act(pod.id, 'start'), 409)).detail).toMatch(
      /while it is TERMINATED/,
    )
    expect(await availability(RTX_5090)).toBe('HIGH')
  })

  it('starts a stopped pod on its own host, and says what is missing when that host is full', async () => {
    const pinned = await created({
      name: 'pinned',
      gpu: { id: RTX_5090, count: 1 },
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    await waitFor(pinned.id, 'RUNNING')
    expect((await act(pinned.id, 'stop')).status).toBe(200)
    const squatter = await created({ name: 'squatter', gpu: { id: RTX_5090, count: 2 } })
    const refused = await problem(await act(pinned.id, 'start'), 409)
    expect(refused.detail).toBe(
      "host eu-ro-1-rtx5090-1 (where the pod's persistent volume lives) has no free NVIDIA GeForce RTX 5090",
    )
    expect((await getPod(pinned.id)).status).toBe('EXITED')
    await terminate(squatter.id)
    const started = (await (await act(pinned.id, 'start')).json()) as PodJson
    expect(started).toMatchObject({ status: 'PROVISIONING', dataCenterId: 'EU-RO-1' })
    await waitFor(pinned.id, 'RUNNING')
    await terminate(pinned.id)
  })

  it('keeps a locked pod from stopping and resetting', async () => {
    const pod = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 } })
    const locked = (await (
      await platform.call(`/v2/pods/${pod.id}`, { method: 'PATCH', json: { locked: true } })
    ).json()) as PodJson
    expect(locked.locked).toBe(true)
    await waitFor(pod.id, 'RUNNING')
    for (const action of ['stop', 'reset']) {
      expect((await problem(await act(pod.id, action), 409)).detail).toBe(
        `pod ${pod.id} is locked: set "locked": false before you ${action} it`,
      )
    }
    expect((await terminate(pod.id)).status).toBe(204)
  })

  it('restarts a crashing process, then leaves it in ERROR with the reason; a clean exit is EXITED', async () => {
    const crashing = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'sleep 2.5; exit 3',
    })
    const errored = await waitFor(crashing.id, 'ERROR', 40_000)
    expect(errored.statusReason).toBe('the process exited with code 3 after 3 restarts')
    expect(errored.cost).toBe(0)
    const clean = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args: 'sleep 2.5; exit 0' })
    expect((await waitFor(clean.id, 'EXITED')).statusReason).toBe('the process exited with code 0')
    const quick = await created({ cpu: { id: 'cpu3c', vcpuCount: 2 }, args: 'exit 7' })
    expect((await waitFor(quick.id, 'ERROR')).statusReason).toBe(
      'the process exited with code 7 while starting',
    )
    const restarted = (await (await act(quick.id, 'start')).json()) as PodJson
    expect(restarted).toMatchObject({
      status: 'PROVISIONING',
      statusReason: null,
      actions: ['start', 'terminate'],
    })
    expect(restarted.cost).toBeGreaterThan(0)
    for (const pod of [crashing, clean, quick]) await terminate(pod.id)
  })

  it('PATCH changes names and locks in place, restarts on container changes, and keeps mount rules', async () => {
    const pod = await created({
      gpu: { id: RTX_4090 },
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    const first = await waitFor(pod.id, 'RUNNING')
    const renamed = (await (
      await platform.call(`/v2/pods/${pod.id}`, { method: 'PATCH', json: { name: 'renamed' } })
    ).json()) as PodJson
    expect(conforming(renamed)).toMatchObject({ name: 'renamed', status: 'RUNNING' })
    const patch = (json: unknown) => platform.call(`/v2/pods/${pod.id}`, { method: 'PATCH', json })
    expect((await problem(await patch({ mounts: { network: [] } }), 400)).detail).toMatch(
      /cannot be emptied/,
    )
    expect(
      (await problem(await patch({ mounts: { network: [{ volumeId: 'v', path: '/d' }] } }), 400))
        .detail,
    ).toMatch(/network cannot be added/)
    expect(
      (
        await problem(
          await patch({ mounts: { persistent: { size: 10, path: '/workspace' } } }),
          400,
        )
      ).detail,
    ).toMatch(/cannot shrink/)
    expect(
      (await problem(await patch({ mounts: { persistent: { size: 20 } } }), 422)).errors,
    ).toContain('body.mounts.persistent.path: is required')
    const unchanged = (await (await patch({ mounts: {} })).json()) as PodJson
    expect(unchanged.mounts).toEqual({ persistent: { size: 20, path: '/workspace' } })
    const restarted = (await (
      await patch({ env: { MODE: 'new' }, mounts: { persistent: { size: 20, path: '/data' } } })
    ).json()) as PodJson
    expect(restarted.status).toBe('PROVISIONING')
    expect(restarted.mounts).toEqual({ persistent: { size: 20, path: '/data' } })
    const second = await waitFor(pod.id, 'RUNNING')
    expect(second.startedAt).not.toBe(first.startedAt)
    await terminate(pod.id)
  })

  it('streams the container output and lifecycle events as server-sent events', async () => {
    const pod = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'for i in 1 2 3 4 5; do echo line-$i; done; echo oops >&2; sleep 300',
    })
    await waitFor(pod.id, 'RUNNING')
    await expect
      .poll(async () =>
        (await (await platform.call(`/v2/pods/${pod.id}/logs?follow=false`)).text()).includes(
          'oops',
        ),
      )
      .toBe(true)
    const response = await platform.call(
      `/v2/pods/${pod.id}/logs?follow=false&tail=3&source=container`,
    )
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const text = await response.text()
    const events = text
      .trim()
      .split('\n\n')
      .map((block) => {
        const [idLine, dataLine] = block.split('\n')
        return {
          id: idLine!.slice(4),
          data: JSON.parse(dataLine!.slice(6)) as { ts: string; source: string; line: string },
        }
      })
    expect(events.map((e) => e.data.line)).toEqual(['line-4', 'line-5', 'oops'])
    expect(events[0]!.id).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z\/\d+$/)
    expect(events[0]!.data.source).toBe('container')

    const resumed = await platform.call(`/v2/pods/${pod.id}/logs?follow=false&source=container`, {
      headers: { 'last-event-id': events[1]!.id },
    })
    expect(await resumed.text()).toMatch(/^id: .*\ndata: .*"line":"oops"/)

    const system = await (
      await platform.call(`/v2/pods/${pod.id}/logs?follow=false&source=system`)
    ).text()
    expect(system).toContain('"source":"system"')
    expect(system).toMatch(/created; placed on host/)
    expect(system).toMatch(/"line":"RUNNING"/)

    const follow = new AbortController()
    const streaming = await platform.call(`/v2/pods/${pod.id}/logs?tail=0`, {
      signal: follow.signal,
    })
    const reader = streaming.body!.getReader()
    const firstChunk = reader.read()
    await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })
    follow.abort()
    await firstChunk.catch(() => undefined)
    expect(
      (await problem(await platform.call(`/v2/pods/${pod.id}/logs?source=fish`), 422)).errors?.[0],
    ).toMatch(/^querystring\.source/)
  })

  it('follows the container log of a pod that is still being placed, from its first line', async () => {
    const pod = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'echo first-line; sleep 300',
    })
    // Right after the create the pod has no workload yet; following waits for it.
    expect((await getPod(pod.id)).status).toBe('PROVISIONING')
    const follow = new AbortController()
    const streaming = await platform.call(`/v2/pods/${pod.id}/logs?source=container`, {
      signal: follow.signal,
    })
    expect(streaming.status).toBe(200)
    const reader = streaming.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    try {
      while (!text.includes('first-line')) {
        const { done, value } = await reader.read()
        if (done) break
        text += value
      }
    } finally {
      follow.abort()
    }
    expect(text).toContain('"line":"first-line"')
    await terminate(pod.id)
  })

  it('resumes a following log stream after Last-Event-ID with each later line once', async () => {
    const pod = await created({
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      args: 'for i in 1 2 3 4 5; do echo line-$i; done; sleep 300',
    })
    await waitFor(pod.id, 'RUNNING')
    const ids = async () =>
      [
        ...(
          await (
            await platform.call(`/v2/pods/${pod.id}/logs?follow=false&source=container`)
          ).text()
        ).matchAll(/^id: (.+)$/gm),
      ].map((match) => match[1]!)
    await expect.poll(async () => (await ids()).length).toBe(5)
    const afterSecond = (await ids())[1]!

    // A client that lost its stream after line-2 and reconnects, as EventSource does.
    const follow = new AbortController()
    const resumed = await platform.call(`/v2/pods/${pod.id}/logs?source=container`, {
      headers: { 'last-event-id': afterSecond },
      signal: follow.signal,
    })
    const reader = resumed.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    const lines = () => [...text.matchAll(/"line":"([^"]+)"/g)].map((match) => match[1])
    // The process prints nothing more: what comes within a second of line-5 is all there is.
    const deadline = { at: Infinity }
    while (Date.now() < deadline.at) {
      const chunk = await Promise.race([
        reader.read(),
        new Promise<undefined>((resolve) => setTimeout(resolve, 250)),
      ])
      if (chunk?.value) text += chunk.value
      if (deadline.at === Infinity && lines().includes('line-5')) deadline.at = Date.now() + 1000
    }
    follow.abort()
    expect(lines()).toEqual(['line-3', 'line-4', 'line-5'])
    await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })
  })
})

describe('TERMINATED pods', () => {
  it('stay readable for 24 hours, then are forgotten', async () => {
    const clock = new ManualClock('2026-06-01T00:00:00.000Z')
    const platform = await startTestPlatform({}, { clock })
    try {
      const response = await platform.call('/v2/pods', {
        method: 'POST',
        json: { name: 'short', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 } },
      })
      const { id } = (await response.json()) as { id: string }
      expect((await platform.call(`/v2/pods/${id}`, { method: 'DELETE' })).status).toBe(204)
      clock.advance(24 * 3600 * 1000 - 1000)
      await platform.lifecycle.tick()
      expect((await platform.call(`/v2/pods/${id}`)).status).toBe(200)
      clock.advance(2000)
      await platform.lifecycle.tick()
      expect((await platform.call(`/v2/pods/${id}`)).status).toBe(404)
    } finally {
      await platform.close()
    }
  })
})
