import { existsSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

interface VolumeJson {
  id: string
  name: string
  size: number
  dataCenter: string
  dataCenterId: string
  type: string
  usedBytes: number
  createdAt: string
}

describe('REST network volumes', () => {
  let platform: TestPlatform
  let otherKey: string

  const post = (json: unknown, key?: string) =>
    platform.call('/v2/network-volumes', { method: 'POST', json, ...(key ? { key } : {}) })
  const patch = (id: string, json: unknown, key?: string) =>
    platform.call(`/v2/network-volumes/${id}`, { method: 'PATCH', json, ...(key ? { key } : {}) })
  const remove = (id: string, key?: string) =>
    platform.call(`/v2/network-volumes/${id}`, { method: 'DELETE', ...(key ? { key } : {}) })
  const get = (id: string, key?: string) =>
    platform.call(`/v2/network-volumes/${id}`, key ? { key } : {})
  /** Where the server keeps a volume's files: `<dataDir>/volumes/<id>` (config dataDir). */
  const directoryOf = (id: string) => path.join(platform.dataDir, '.podyard', 'volumes', id)

  async function ok<T = VolumeJson>(response: Response, status = 200): Promise<T> {
    const text = await response.text()
    expect(response.status, text).toBe(status)
    return (text ? JSON.parse(text) : undefined) as T
  }
  async function problem(response: Response, status: number) {
    const body = (await response.json()) as { detail: string; errors?: string[] }
    expect(response.status, JSON.stringify(body)).toBe(status)
    return body
  }
  const created = async (body: Record<string, unknown>) =>
    ok(await post({ name: 'data', size: 10, dataCenterId: 'EU-RO-1', ...body }), 201)

  beforeAll(async () => {
    platform = await startTestPlatform()
    otherKey = await otherAccountKey(platform, 'volumes-other@example.com')
  })
  afterAll(() => platform.close())

  describe('create', () => {
    it('is 201 with the v2 shape, both data center names, usage and a directory', async () => {
      const volume = await created({ name: 'datasets', size: 50 })
      expect(volume).toEqual({
        id: expect.stringMatching(/^[a-z0-9]{10}$/),
        name: 'datasets',
        size: 50,
        dataCenter: 'EU-RO-1',
        dataCenterId: 'EU-RO-1',
        type: 'STANDARD',
        usedBytes: 0,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      })
      expect(existsSync(directoryOf(volume.id))).toBe(true)
    })

    it('takes the data center by its v2 name, and a type it offers', async () => {
      const volume = await ok(
        await post({ name: 'fast', size: 20, dataCenter: 'US-KS-2', type: 'HIGH_PERFORMANCE' }),
        201,
      )
      expect(volume).toMatchObject({
        dataCenter: 'US-KS-2',
        dataCenterId: 'US-KS-2',
        type: 'HIGH_PERFORMANCE',
      })
    })

    it('accepts the bounds 10 and 4096 GB', async () => {
      expect((await created({ size: 10 })).size).toBe(10)
      expect((await created({ size: 4096 })).size).toBe(4096)
    })

    it.each<[string, Record<string, unknown>, string]>([
      ['size 9', { size: 9 }, 'body.size: must be >= 10'],
      ['size 4097', { size: 4097 }, 'body.size: must be <= 4096'],
      ['size not an integer', { size: 10.5 }, 'body.size: must be integer'],
      ['size as text', { size: '10' }, 'body.size: must be integer'],
      ['an extra property', { bogus: true }, 'body.bogus: unknown property'],
      [
        'an unknown type',
        { type: 'FAST' },
        'body.type: must be one of "STANDARD", "HIGH_PERFORMANCE"',
      ],
      ['an empty name', { name: '' }, 'body.name: must NOT have fewer than 1 characters'],
      [
        'a name of 192 characters',
        { name: 'n'.repeat(192) },
        'body.name: must NOT have more than 191 characters',
      ],
    ])('is 422 for %s', async (_, body, error) => {
      const failure = await problem(
        await post({ name: 'data', size: 10, dataCenterId: 'EU-RO-1', ...body }),
        422,
      )
      expect(failure.errors).toContain(error)
    })

    it('is 422 without a data center, and 400 with both names', async () => {
      const missing = await problem(await post({ name: 'data', size: 10 }), 422)
      expect(missing.errors).toEqual(['body.dataCenterId: is required (or give it as dataCenter)'])
      const both = await problem(
        await post({ name: 'data', size: 10, dataCenterId: 'EU-RO-1', dataCenter: 'EU-RO-1' }),
        400,
      )
      expect(both.detail).toBe('give the data center as dataCenterId or as dataCenter, not both')
    })

    it('is 400 for an unknown data center', async () => {
      const failure = await problem(
        await post({ name: 'data', size: 10, dataCenterId: 'MARS-1' }),
        400,
      )
      expect(failure.detail).toBe('unknown data center "MARS-1": see GET /v2/catalog/datacenters')
    })

    it('is 400 for a type the data center does not offer', async () => {
      const failure = await problem(
        await post({ name: 'data', size: 10, dataCenterId: 'EU-RO-1', type: 'HIGH_PERFORMANCE' }),
        400,
      )
      expect(failure.detail).toBe(
        'data center EU-RO-1 does not offer HIGH_PERFORMANCE network volumes; it offers STANDARD',
      )
    })
  })

  describe('read and update', () => {
    let volume: VolumeJson
    beforeAll(async () => {
      volume = await created({ name: 'shared', size: 20, dataCenterId: 'CA-MTL-1' })
    })

    it('gets and lists the volume', async () => {
      expect(await ok(await get(volume.id))).toEqual(volume)
      const { networkVolumes } = await ok<{ networkVolumes: VolumeJson[] }>(
        await platform.call('/v2/network-volumes'),
      )
      expect(networkVolumes).toContainEqual(volume)
    })

    it('reports the bytes of the files in it', async () => {
      writeFileSync(path.join(directoryOf(volume.id), 'weights.bin'), Buffer.alloc(12_345))
      // A small volume is measured at every read (large ones at most every 10 s).
      expect((await ok(await get(volume.id))).usedBytes).toBe(12_345)
    })

    it('grows (200) and renames', async () => {
      const grown = await ok(await patch(volume.id, { size: 30 }))
      expect(grown).toMatchObject({ id: volume.id, size: 30, name: 'shared' })
      const renamed = await ok(await patch(volume.id, { name: 'renamed' }))
      expect(renamed).toMatchObject({ size: 30, name: 'renamed', createdAt: volume.createdAt })
      expect(await ok(await get(volume.id))).toMatchObject({ size: 30, name: 'renamed' })
      expect(existsSync(path.join(directoryOf(volume.id), 'weights.bin'))).toBe(true)
    })

    it('refuses a shrink with 400 and keeps the size', async () => {
      const failure = await problem(await patch(volume.id, { size: 29 }), 400)
      expect(failure.detail).toBe('size cannot shrink from 30 to 29 GB')
      expect((await ok(await get(volume.id))).size).toBe(30)
    })

    it('is 422 for a patch out of bounds or with other fields', async () => {
      expect((await problem(await patch(volume.id, { size: 4097 }), 422)).errors).toContain(
        'body.size: must be <= 4096',
      )
      expect(
        (await problem(await patch(volume.id, { dataCenterId: 'EU-RO-1' }), 422)).errors,
      ).toContain('body.dataCenterId: unknown property')
    })

    it('is 404 for another account on get, patch and delete, and not in its list', async () => {
      for (const response of [
        await get(volume.id, otherKey),
        await patch(volume.id, { size: 40 }, otherKey),
        await remove(volume.id, otherKey),
      ]) {
        expect((await problem(response, 404)).detail).toBe(`network volume ${volume.id} not found`)
      }
      const { networkVolumes } = await ok<{ networkVolumes: VolumeJson[] }>(
        await platform.call('/v2/network-volumes', { key: otherKey }),
      )
      expect(networkVolumes).toEqual([])
      expect((await ok(await get(volume.id))).size).toBe(30)
      expect(existsSync(directoryOf(volume.id))).toBe(true)
    })
  })

  describe('delete', () => {
    it('is 204, removes the directory and its files, and then the volume is 404', async () => {
      const volume = await created({ name: 'scratch' })
      writeFileSync(path.join(directoryOf(volume.id), 'file'), 'x')
      expect((await remove(volume.id)).status).toBe(204)
      expect(existsSync(directoryOf(volume.id))).toBe(false)
      await problem(await get(volume.id), 404)
      await problem(await remove(volume.id), 404)
    })
  })

  it('documents its routes in the OpenAPI document under Network Volumes', async () => {
    const doc = (await (await platform.call('/v2/openapi.json')).json()) as {
      paths: Record<string, Record<string, { operationId: string; tags: string[] }>>
    }
    const operations = Object.values(doc.paths['/v2/network-volumes/{id}'] ?? {}).concat(
      Object.values(doc.paths['/v2/network-volumes'] ?? {}),
    )
    expect(operations.map((o) => o.operationId).sort()).toEqual([
      'createNetworkVolume',
      'deleteNetworkVolume',
      'getNetworkVolume',
      'listNetworkVolumes',
      'updateNetworkVolume',
    ])
    expect(new Set(operations.flatMap((o) => o.tags))).toEqual(new Set(['Network Volumes']))
  })
})
