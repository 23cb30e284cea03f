import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

interface TemplateJson {
  id: string
  name: string
  [key: string]: unknown
}

describe('REST templates', () => {
  let platform: TestPlatform
  let strangerKey: string

  const call = (method: string, path: string, json?: unknown, key?: string) =>
    platform.call(path, {
      method,
      ...(json === undefined ? {} : { json }),
      ...(key ? { key } : {}),
    })
  async function ok<T>(response: Response, status = 200): Promise<T> {
    const body = response.status === 204 ? undefined : await response.json()
    expect(response.status, JSON.stringify(body)).toBe(status)
    return body as T
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    strangerKey = await otherAccountKey(platform, 'stranger@example.com')
  })
  afterAll(() => platform.close())

  it('creates with the documented defaults and reads, lists, updates and deletes', async () => {
    const created = await ok<TemplateJson>(
      await call('POST', '/v2/templates', { name: 'base', image: 'ubuntu:22.04' }),
      201,
    )
    expect(created).toEqual({
      id: expect.stringMatching(/^[a-z0-9]{10}$/),
      name: 'base',
      image: 'ubuntu:22.04',
      args: '',
      disk: 50,
      env: {},
      ports: [],
      registry: null,
      mounts: {},
      serverless: false,
      public: false,
      category: 'NVIDIA',
      startSsh: true,
      startJupyter: true,
      allowedCudaVersions: [],
      createdAt: expect.any(String),
    })
    expect(await ok(await call('GET', `/v2/templates/${created.id}`))).toEqual(created)
    const { templates } = await ok<{ templates: TemplateJson[] }>(
      await call('GET', '/v2/templates'),
    )
    expect(templates.map((t) => t.id)).toContain(created.id)
    const updated = await ok<TemplateJson>(
      await call('PATCH', `/v2/templates/${created.id}`, { disk: 80, env: { A: '1' } }),
    )
    expect(updated).toMatchObject({ disk: 80, env: { A: '1' }, name: 'base' })
    await ok(await call('DELETE', `/v2/templates/${created.id}`), 204)
    expect((await call('GET', `/v2/templates/${created.id}`)).status).toBe(404)
  })

  it('validates: 422 for bounds and unknown properties, 400 for a duplicate name or an unknown registry', async () => {
    const invalid = [
      [{ image: 'x' }, 'body.name: is required'],
      [{ name: 'a', image: 'x', disk: 0 }, 'body.disk: must be >= 1'],
      [
        { name: 'a', image: 'x', mounts: { persistent: { size: 9, path: '/w' } } },
        'body.mounts.persistent.size: must be >= 10',
      ],
      [{ name: 'a', image: 'x', mounts: { network: [] } }, 'body.mounts.network: unknown property'],
      [{ name: 'a', image: 'x', category: 'TPU' }, /^body\.category: /],
      [
        { name: 'a', image: 'x', allowedCudaVersions: ['9.0'] },
        /^body\.allowedCudaVersions\[0\]: /,
      ],
      [{ name: 'a', image: 'x', isPublic: true }, 'body.isPublic: unknown property'],
    ] as const
    for (const [body, error] of invalid) {
      const response = await call('POST', '/v2/templates', body)
      expect(response.status, JSON.stringify(body)).toBe(422)
      const { errors } = (await response.json()) as { errors: string[] }
      if (typeof error === 'string') expect(errors).toContain(error)
      else
        expect(
          errors.some((e) => error.test(e)),
          errors.join('\n'),
        ).toBe(true)
    }
    await ok(await call('POST', '/v2/templates', { name: 'twice', image: 'x' }), 201)
    const duplicate = await call('POST', '/v2/templates', { name: 'twice', image: 'y' })
    expect(duplicate.status).toBe(400)
    expect(((await duplicate.json()) as { detail: string }).detail).toMatch(
      /^a template named "twice" already exists/,
    )
    const registry = await call('POST', '/v2/templates', {
      name: 'private',
      image: 'x',
      registry: 'nope',
    })
    expect(((await registry.json()) as { detail: string }).detail).toBe('registry "nope" not found')
  })

  it('keeps private templates private (404) and public ones read-only (403) for other accounts', async () => {
    const secret = await ok<TemplateJson>(
      await call('POST', '/v2/templates', { name: 'secret', image: 'x' }),
      201,
    )
    const shared = await ok<TemplateJson>(
      await call('POST', '/v2/templates', { name: 'shared', image: 'x', public: true }),
      201,
    )
    expect((await call('GET', `/v2/templates/${secret.id}`, undefined, strangerKey)).status).toBe(
      404,
    )
    expect(
      (await call('DELETE', `/v2/templates/${secret.id}`, undefined, strangerKey)).status,
    ).toBe(404)
    expect((await call('GET', `/v2/templates/${shared.id}`, undefined, strangerKey)).status).toBe(
      200,
    )
    for (const [method, json] of [
      ['PATCH', { name: 'mine' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await call(method, `/v2/templates/${shared.id}`, json, strangerKey)
      expect(response.status).toBe(403)
      expect(((await response.json()) as { detail: string }).detail).toMatch(
        /belongs to another account/,
      )
    }
    const theirs = await ok<{ templates: TemplateJson[] }>(
      await call('GET', '/v2/templates', undefined, strangerKey),
    )
    expect(theirs.templates).toEqual([])
    const withPublic = await ok<{ templates: TemplateJson[] }>(
      await call('GET', '/v2/templates?includePublic=true', undefined, strangerKey),
    )
    expect(withPublic.templates.map((t) => t.id)).toEqual([shared.id])
    const community = await ok<{ templates: TemplateJson[] }>(
      await call('GET', '/v2/catalog/templates?source=community'),
    )
    expect(community.templates.map((t) => t.id)).toContain(shared.id)
  })

  it('ships built-in templates in the catalog, usable by everyone and changed by no one', async () => {
    const { templates } = await ok<{ templates: TemplateJson[] }>(
      await call('GET', '/v2/catalog/templates?source=official'),
    )
    expect(templates.map((t) => t.id)).toEqual(['runpod-ubuntu', 'runpod-torch-v240'])
    expect(templates.find((t) => t.id === 'runpod-ubuntu')).toMatchObject({
      category: 'CPU',
      public: true,
    })
    expect(templates.find((t) => t.id === 'runpod-torch-v240')).toMatchObject({
      category: 'NVIDIA',
      ports: ['8888/http', '22/tcp'],
    })
    expect(
      (await call('GET', '/v2/catalog/templates?source=verified').then((r) => r.json())) as unknown,
    ).toEqual({ templates: [] })
    expect((await call('GET', '/v2/catalog/templates?source=mine')).status).toBe(422)
    expect((await call('PATCH', '/v2/templates/runpod-ubuntu', { name: 'x' })).status).toBe(403)
    expect((await call('GET', '/v2/templates/runpod-ubuntu', undefined, strangerKey)).status).toBe(
      200,
    )
  })

  it('creates pods from a template, body fields overriding, keeping no link to it', async () => {
    const template = await ok<TemplateJson>(
      await call('POST', '/v2/templates', {
        name: 'web',
        image: 'web-image',
        args: 'sleep 600',
        disk: 30,
        ports: ['8080/http'],
        env: { FROM_TEMPLATE: '1', SHARED: 'template' },
        mounts: { persistent: { size: 20, path: '/workspace' } },
      }),
      201,
    )
    const pod = await ok<Record<string, unknown>>(
      await call('POST', '/v2/pods', {
        name: 'from-template',
        templateId: template.id,
        gpu: { id: 'NVIDIA RTX A6000' },
        disk: 40,
        env: { SHARED: 'body' },
      }),
      201,
    )
    expect(pod).toMatchObject({
      template: template.id,
      image: 'web-image',
      args: 'sleep 600',
      disk: 40,
      ports: ['8080/http'],
      env: { FROM_TEMPLATE: '1', SHARED: 'body' },
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    const cpuPod = await ok<Record<string, unknown>>(
      await call('POST', '/v2/pods', {
        name: 'cpu',
        templateId: template.id,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
      }),
      201,
    )
    expect(cpuPod.mounts).toEqual({})

    // The pods name the template, which cannot be deleted while they live.
    const refused = await ok<{ detail: string }>(
      await call('DELETE', `/v2/templates/${template.id}`),
      400,
    )
    expect(refused.detail).toContain(pod.id as string)
    expect(refused.detail).toContain(cpuPod.id as string)
    await ok(await call('DELETE', `/v2/pods/${pod.id as string}`), 204)
    await ok(await call('DELETE', `/v2/pods/${cpuPod.id as string}`), 204)
    await ok(await call('DELETE', `/v2/templates/${template.id}`), 204)
  })

  it('accepts a create body copied from a template response (spec rule 6), and the built-in ids', async () => {
    const template = await ok<Record<string, unknown>>(
      await call('GET', '/v2/templates/runpod-torch-v240'),
    )
    const { image, args, disk, ports, env } = template
    const copied = await call('POST', '/v2/pods', {
      name: 'copied',
      image,
      args,
      disk,
      ports,
      env,
      gpu: { id: 'NVIDIA RTX A6000' },
    })
    const pod = await ok<{ id: string }>(copied, 201)
    await ok(await call('DELETE', `/v2/pods/${pod.id}`), 204)
    const fromBuiltin = await ok<{ id: string; cpu: unknown; template: string }>(
      await call('POST', '/v2/pods', {
        name: 'ubuntu',
        templateId: 'runpod-ubuntu',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
      }),
      201,
    )
    expect(fromBuiltin.template).toBe('runpod-ubuntu')
    await ok(await call('DELETE', `/v2/pods/${fromBuiltin.id}`), 204)
    const missing = await call('POST', '/v2/pods', {
      name: 'x',
      templateId: 'nope',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    })
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { detail: string }).detail).toBe('template "nope" not found')
    const noImage = await call('POST', '/v2/pods', {
      name: 'x',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    })
    expect(noImage.status).toBe(422)
    expect(((await noImage.json()) as { errors: string[] }).errors).toEqual([
      'body.image: is required',
    ])
  })
})
