import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { json } from '../support/http.js'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * Mount paths are absolute, normalized, not `/` and not under /proc, /sys or /dev everywhere one
 * is accepted (docs/pods.md, "Mount paths"): REST pods (create and PATCH), REST
 * templates (create and PATCH), GraphQL pod deployments and saveTemplate. Each refusal is 422
 * (GraphQL: VALIDATION_FAILED) naming the field.
 */

type Json = Record<string, unknown>
const BAD_PATHS = ['/', '/proc', '/../..', '/sys/kernel', '/dev/shm', '//data', '/data/../etc']
const RTX_4090 = 'NVIDIA GeForce RTX 4090'

describe('mount paths', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform?.close())

  async function refused(response: Response, field: string): Promise<void> {
    const text = await response.text()
    expect(response.status, text).toBe(422)
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    const body = JSON.parse(text) as { errors: string[] }
    expect(
      body.errors.some((line) => line.startsWith(`${field}: must`)),
      text,
    ).toBe(true)
  }

  const graphqlErrors = async (query: string) => {
    const response = await platform.call('/graphql', { method: 'POST', json: { query } })
    const body = (await response.json()) as {
      errors?: Array<{ extensions: { code: string; errors?: string[] } }>
    }
    return body.errors ?? []
  }

  it('REST pods refuse them on create and on PATCH', async () => {
    const volume = await json<{ id: string }>(
      await platform.call('/v2/network-volumes', {
        method: 'POST',
        json: { name: 'v', size: 10, dataCenterId: 'US-KS-2' },
      }),
      201,
    )
    for (const path of BAD_PATHS) {
      await refused(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: {
            name: 'p',
            image: 'x',
            gpu: { id: RTX_4090 },
            mounts: { persistent: { size: 10, path } },
          },
        }),
        'body.mounts.persistent.path',
      )
      await refused(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: {
            name: 'p',
            image: 'x',
            cpu: { id: 'cpu3c', vcpuCount: 2 },
            mounts: { network: [{ volumeId: volume.id, path }] },
          },
        }),
        'body.mounts.network[0].path',
      )
    }
    const pod = await json<{ id: string; mounts: Json }>(
      await platform.call('/v2/pods', {
        method: 'POST',
        json: {
          name: 'p',
          image: 'x',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          mounts: { network: [{ volumeId: volume.id, path: '/data' }] },
        },
      }),
      201,
    )
    for (const path of BAD_PATHS) {
      await refused(
        await platform.call(`/v2/pods/${pod.id}`, {
          method: 'PATCH',
          json: { mounts: { network: [{ volumeId: volume.id, path }] } },
        }),
        'body.mounts.network[0].path',
      )
    }
    const after = await json<{ mounts: Json }>(await platform.call(`/v2/pods/${pod.id}`))
    expect(after.mounts).toEqual({ network: [{ volumeId: volume.id, path: '/data' }] })
    expect((await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE' })).status).toBe(204)
  })

  it('REST templates refuse them on create and on PATCH', async () => {
    for (const path of BAD_PATHS) {
      await refused(
        await platform.call('/v2/templates', {
          method: 'POST',
          json: { name: 't', image: 'x', mounts: { persistent: { size: 10, path } } },
        }),
        'body.mounts.persistent.path',
      )
    }
    const template = await json<{ id: string }>(
      await platform.call('/v2/templates', {
        method: 'POST',
        json: { name: 't', image: 'x', mounts: { persistent: { size: 10, path: '/workspace' } } },
      }),
      201,
    )
    await refused(
      await platform.call(`/v2/templates/${template.id}`, {
        method: 'PATCH',
        json: { mounts: { persistent: { size: 10, path: '/proc/self' } } },
      }),
      'body.mounts.persistent.path',
    )
  })

  it('GraphQL deployments and saveTemplate refuse them, naming volumeMountPath', async () => {
    for (const path of BAD_PATHS) {
      const literal = JSON.stringify(path)
      for (const mutation of [
        `podFindAndDeployOnDemand(input: { imageName: "x", gpuTypeId: "${RTX_4090}", gpuCount: 1, volumeInGb: 20, volumeMountPath: ${literal} }) { id }`,
        `deployCpuPod(input: { imageName: "x", instanceId: "cpu3c-2-4", volumeMountPath: ${literal} }) { id }`,
        `saveTemplate(input: { name: "g", imageName: "x", containerDiskInGb: 5, volumeInGb: 20, volumeMountPath: ${literal} }) { id }`,
      ]) {
        const [error] = await graphqlErrors(`mutation { ${mutation} }`)
        expect(error?.extensions.code, mutation).toBe('VALIDATION_FAILED')
        expect(
          error?.extensions.errors?.some((e) => e.startsWith('input.volumeMountPath: must')),
        ).toBe(true)
      }
    }
  })
})
