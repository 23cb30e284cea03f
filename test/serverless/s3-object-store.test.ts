import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  decodeXmlEntities,
  parseListObjectsV2,
  S3Error,
  S3ObjectStore,
  type S3ObjectStoreOptions,
} from '../../src/store/s3-object-store.js'
import { loopbackFetch, startFakeS3, type FakeS3 } from '../support/fake-s3.js'

/**
 * The S3 object store against a fake S3 that recomputes every request's Signature Version 4
 * with its own verifier (test/support/fake-s3.ts): a signer mistake is a 403 here.
 */

const CREDENTIALS = { accessKeyId: 'AKIATESTPODYARD', secretAccessKey: 'fake/s3+secret/never-seen' }

describe('the S3 object store', () => {
  let s3: FakeS3
  const store = (overrides: Partial<S3ObjectStoreOptions> = {}) =>
    new S3ObjectStore({
      endpoint: s3.endpoint,
      region: 'eu-west-3',
      bucket: 'podyard-images',
      credentials: CREDENTIALS,
      forcePathStyle: true,
      ...overrides,
    })

  beforeAll(async () => {
    s3 = await startFakeS3({ bucket: 'podyard-images', region: 'eu-west-3', ...CREDENTIALS })
  })
  afterAll(() => s3?.close())

  it('puts, gets and deletes objects path-style, every request signed', async () => {
    const objects = store({ prefix: '/team-a/' })
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255])
    await objects.put('images/sync-1.png', png, 'image/png')
    expect(s3.objects.get('team-a/images/sync-1.png')).toEqual({
      body: png,
      contentType: 'image/png',
    })
    expect(await objects.get('images/sync-1.png')).toEqual({ body: png, contentType: 'image/png' })
    expect(await objects.get('images/missing.png')).toBeUndefined()
    await objects.delete('images/sync-1.png')
    await objects.delete('images/sync-1.png')
    expect(await objects.get('images/sync-1.png')).toBeUndefined()
    expect(s3.objects.size).toBe(0)

    expect(s3.requests.length).toBe(6)
    for (const request of s3.requests) {
      expect(request, JSON.stringify(request)).toMatchObject({ verified: true })
      expect(request.url.startsWith('/podyard-images/team-a/images/')).toBe(true)
      expect(request.signedHeaders).toEqual(
        expect.arrayContaining(['host', 'x-amz-content-sha256', 'x-amz-date']),
      )
    }
    expect(s3.requests[0]!.signedHeaders).toContain('content-type')
  })

  it('lists keys with ListObjectsV2, across pages, relative to its prefix', async () => {
    const objects = store({ prefix: 'p' })
    const keys = ['images/a.png', 'images/b.png', 'images/c.png', 'other/x.png']
    for (const key of keys) await objects.put(key, Buffer.from(key), 'image/png')
    await store().put('outside.png', Buffer.from('x'), 'image/png')
    const listed: string[] = []
    for await (const key of objects.list('images/', 2)) listed.push(key)
    expect(listed).toEqual(['images/a.png', 'images/b.png', 'images/c.png'])
    const all: string[] = []
    for await (const key of objects.list()) all.push(key)
    expect(all).toEqual(keys)
    const lists = s3.requests.filter((r) => r.url.includes('list-type=2'))
    expect(lists.length).toBe(3)
    expect(lists.every((r) => r.verified)).toBe(true)
    expect(lists[1]!.url).toContain('continuation-token=')
  })

  it('speaks virtual-hosted style: the bucket in the host name', async () => {
    const before = s3.requests.length
    const objects = store({
      endpoint: `http://s3.test:${s3.port}`,
      forcePathStyle: false,
      fetch: loopbackFetch(s3.port),
    })
    expect(objects.url('images/a b.png').href).toBe(
      `http://podyard-images.s3.test:${s3.port}/images/a%20b.png`,
    )
    await objects.put('images/v.png', Buffer.from('v'), 'image/png')
    expect((await objects.get('images/v.png'))?.body.toString()).toBe('v')
    const sent = s3.requests.slice(before)
    expect(sent.map((r) => [r.host, r.url, r.verified])).toEqual([
      [`podyard-images.s3.test:${s3.port}`, '/images/v.png', true],
      [`podyard-images.s3.test:${s3.port}`, '/images/v.png', true],
    ])
  })

  it('builds AWS URLs for both styles, under an endpoint path too', () => {
    const aws = new S3ObjectStore({
      endpoint: 'https://s3.eu-west-3.amazonaws.com',
      region: 'eu-west-3',
      bucket: 'bk1',
      credentials: CREDENTIALS,
    })
    expect(aws.url('images/x.png').href).toBe('https://bk1.s3.eu-west-3.amazonaws.com/images/x.png')
    expect(aws.url('', 'list-type=2').href).toBe(
      'https://bk1.s3.eu-west-3.amazonaws.com/?list-type=2',
    )
    const pathStyle = new S3ObjectStore({
      endpoint: 'https://gw.example/storage/',
      region: 'auto',
      bucket: 'bk1',
      credentials: CREDENTIALS,
      forcePathStyle: true,
    })
    expect(pathStyle.url('images/x.png').href).toBe('https://gw.example/storage/bk1/images/x.png')
    expect(pathStyle.url('', 'list-type=2').href).toBe('https://gw.example/storage/bk1?list-type=2')
  })

  it('fails with the status and S3 code, never the secret, when S3 refuses', async () => {
    const wrong = store({ credentials: { ...CREDENTIALS, secretAccessKey: 'not-the-secret' } })
    const failure = await wrong.put('images/x.png', Buffer.from('x'), 'image/png').then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(S3Error)
    expect(failure).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' })
    expect((failure as Error).message).toBe(
      'S3 PutObject images/x.png in bucket podyard-images: HTTP 403 SignatureDoesNotMatch',
    )
    expect(JSON.stringify(failure)).not.toContain('not-the-secret')
    expect(s3.requests.at(-1)).toMatchObject({ verified: false, reason: 'SignatureDoesNotMatch' })
    await expect(wrong.get('images/x.png')).rejects.toThrow(/GetObject .* HTTP 403/)
    // A different region is a different signing key: the fake refuses it too.
    await expect(store({ region: 'us-east-1' }).get('images/x.png')).rejects.toThrow(/HTTP 403/)
  })

  it('refuses keys and settings that would change what a URL addresses', async () => {
    const objects = store()
    await expect(objects.put('../x', Buffer.from('x'), 'image/png')).rejects.toThrow(/invalid/)
    expect(await objects.get('a//b')).toBeUndefined()
    expect(() => store({ bucket: 'Bad_Bucket' })).toThrow(/bucket/)
    expect(() => store({ endpoint: 'ftp://x' })).toThrow(/http/)
    expect(() => store({ endpoint: 'http://u:p@x' })).toThrow(/nothing more/)
    expect(() => store({ forcePathStyle: false })).toThrow(/IP address: set forcePathStyle/)
  })

  it('reads ListObjectsV2 XML minimally: entities decoded, nothing expanded', () => {
    const page = parseListObjectsV2(
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY boom "boom">]><ListBucketResult>' +
        '<Contents><Key>a&amp;b&lt;c&#x41;&#66;&boom;.png</Key><Size>1</Size></Contents>' +
        '<Contents><Key>z.png</Key></Contents><IsTruncated>true</IsTruncated>' +
        '<NextContinuationToken>t&amp;1</NextContinuationToken></ListBucketResult>',
    )
    expect(page).toEqual({ keys: ['a&b<cAB&boom;.png', 'z.png'], nextContinuationToken: 't&1' })
    expect(parseListObjectsV2('<ListBucketResult><IsTruncated>false</IsTruncated>')).toEqual({
      keys: [],
      nextContinuationToken: undefined,
    })
    expect(decodeXmlEntities('&#1114112;&quot;&apos;')).toBe(`"'`)
  })
})
