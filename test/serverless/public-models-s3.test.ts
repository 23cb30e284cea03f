import { existsSync } from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/load-config.js'
import { objectStoreFor } from '../../src/wiring/model-wiring.js'
import { startFakeS3, type FakeS3 } from '../support/fake-s3.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * A public image job whose image the platform keeps in an S3-compatible bucket
 * (`objects.kind: s3`, docs/public-endpoints.md "Storage"): the fake S3 checks every request's
 * signature; podyard's own signed URL still fronts the image (proxied, 403/410 as with the
 * local store), and the secret key never reaches a log line.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const IMAGE = 'podyard-reference-image'
const DAY_MS = 24 * 60 * 60 * 1000
const SECRET = 'podyard-s3-secret-never-logged/+xyz'
const S3 = { bucket: 'podyard-results', region: 'eu-central-1', accessKeyId: 'AKIAPODYARDTEST' }

/** Real time plus an offset the test moves; the S3 signer keeps real time regardless. */
const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) }

describe('public image results in an S3-compatible bucket', () => {
  let s3: FakeS3
  let platform: TestPlatform
  const lines: string[] = []
  let url: string
  let jobId: string

  beforeAll(async () => {
    s3 = await startFakeS3({ ...S3, secretAccessKey: SECRET })
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString())
        done()
      },
    })
    platform = await startTestPlatform(
      {
        workers: {
          intervalMs: 200,
          pingIntervalMs: 1000,
          heartbeatTimeoutMs: 10_000,
          startTimeoutMs: 30_000,
          stopGraceMs: 2000,
          unhealthyRetentionMs: 1500,
        },
        objects: {
          kind: 's3',
          endpoint: s3.endpoint,
          region: S3.region,
          bucket: S3.bucket,
          accessKeyId: S3.accessKeyId,
          secretAccessKey: SECRET,
          prefix: 'podyard/',
          forcePathStyle: true,
        },
      },
      { clock, logger: pino({ level: 'trace' }, sink) },
    )
  })

  afterAll(async () => {
    await platform?.close()
    await s3?.close()
  })

  it('stores the image in the bucket and serves it through the signed podyard URL', async () => {
    const key = await otherAccountKey(platform, 's3-caller@example.com')
    const me = (await (await platform.call('/v2/account', { key })).json()) as Json
    const added = await platform.call(`/v2/admin/accounts/${me.id}/credits`, {
      method: 'POST',
      json: { amount: 1 },
    })
    expect(added.status).toBe(200)

    const response = await platform.call(`/v2/${IMAGE}/runsync`, {
      method: 'POST',
      json: { input: { prompt: 'A harbour crane in fog', width: 192, height: 64 } },
      key,
    })
    const done = (await response.json()) as Json
    expect(response.status, JSON.stringify(done)).toBe(200)
    expect(done.status).toBe('COMPLETED')
    jobId = done.id
    url = done.output.image_url
    expect(url.startsWith(`${platform.url}/v2/objects/images/${jobId}.png?expires=`)).toBe(true)

    const stored = s3.objects.get(`podyard/images/${jobId}.png`)
    expect(stored?.contentType).toBe('image/png')
    expect(stored!.body.readUInt32BE(16)).toBe(192)
    expect(stored!.body.readUInt32BE(20)).toBe(64)
    // Nothing went to the local store.
    expect(existsSync(path.join(platform.dataDir, '.podyard', 'objects'))).toBe(false)

    const before = s3.requests.length
    const image = await fetch(url)
    expect(image.status).toBe(200)
    expect(image.headers.get('content-type')).toBe('image/png')
    expect(Buffer.from(await image.arrayBuffer())).toEqual(stored!.body)
    const gets = s3.requests.slice(before)
    expect(gets.map((r) => [r.method, r.url, r.verified])).toEqual([
      ['GET', `/${S3.bucket}/podyard/images/${jobId}.png`, true],
    ])
    expect(s3.requests.every((r) => r.verified)).toBe(true)
  })

  it('keeps podyard’s URL rules: 403 when tampered, without asking S3', async () => {
    const before = s3.requests.length
    const later = new URL(url)
    later.searchParams.set('expires', String(Number(later.searchParams.get('expires')) + 60))
    expect((await fetch(later)).status).toBe(403)
    expect((await fetch(url.split('?')[0]!)).status).toBe(403)
    expect(s3.requests.length).toBe(before)
  })

  it('answers 404 for a valid URL whose object is gone from the bucket', async () => {
    const saved = s3.objects.get(`podyard/images/${jobId}.png`)!
    s3.objects.delete(`podyard/images/${jobId}.png`)
    expect((await fetch(url)).status).toBe(404)
    s3.objects.set(`podyard/images/${jobId}.png`, saved)
  })

  it('answers 410 once the URL is 7 days old, whatever is in the bucket', async () => {
    clock.offsetMs = 7 * DAY_MS + 1000
    const gone = await fetch(url)
    expect(gone.status).toBe(410)
    expect(((await gone.json()) as Json).detail).toMatch(/expired/)
    clock.offsetMs = 0
  })

  it('answers 500 while the bucket fails, logging the S3 error without the secret', async () => {
    s3.down = true
    try {
      const failed = await fetch(url)
      expect(failed.status).toBe(500)
      expect(await failed.text()).not.toContain(SECRET)
    } finally {
      s3.down = false
    }
    expect(lines.join('')).toContain(
      `S3 GetObject images/${jobId}.png in bucket ${S3.bucket}: HTTP 503 SlowDown`,
    )
    expect((await fetch(url)).status).toBe(200)
  })

  it('never logs the secret key, even at trace level', () => {
    const log = lines.join('')
    expect(log).toContain('/v2/objects/images/')
    expect(log).not.toContain(SECRET)
    expect(log).not.toContain(encodeURIComponent(SECRET))
  })
})

describe('objects configuration', () => {
  const config = (objects: Record<string, unknown>) => {
    const base = loadConfig({ cwd: '/tmp', env: {} })
    return objectStoreFor({ ...base, objects: { ...base.objects, ...objects } })
  }

  it('defaults to the local store and reads the S3 settings from the environment', () => {
    const defaults = loadConfig({ cwd: '/tmp', env: {} })
    expect(defaults.objects).toEqual({
      kind: 'local',
      region: 'us-east-1',
      prefix: '',
      forcePathStyle: false,
    })
    const fromEnv = loadConfig({
      cwd: '/tmp',
      env: {
        PODYARD_OBJECTS_KIND: 's3',
        PODYARD_OBJECTS_ENDPOINT: 'http://minio:9000',
        PODYARD_OBJECTS_BUCKET: 'results',
        PODYARD_OBJECTS_ACCESS_KEY_ID: 'id',
        PODYARD_OBJECTS_SECRET_ACCESS_KEY: SECRET,
        PODYARD_OBJECTS_FORCE_PATH_STYLE: 'true',
      },
    })
    expect(fromEnv.objects).toMatchObject({ kind: 's3', forcePathStyle: true, bucket: 'results' })
    expect(objectStoreFor(fromEnv).constructor.name).toBe('S3ObjectStore')
  })

  it('refuses an incomplete or invalid S3 setting at start, naming the keys, not the secret', () => {
    expect(() => config({ kind: 's3', endpoint: 'http://minio:9000' })).toThrow(
      'objects.kind is s3, which needs objects.bucket, objects.accessKeyId, objects.secretAccessKey',
    )
    let message = ''
    try {
      config({
        kind: 's3',
        endpoint: 'http://10.0.0.5:9000',
        bucket: 'results',
        accessKeyId: 'id',
        secretAccessKey: SECRET,
      })
    } catch (error) {
      message = (error as Error).message
      expect((error as Error).name).toBe('ConfigError')
    }
    expect(message).toMatch(/IP address: set forcePathStyle/)
    expect(message).not.toContain(SECRET)
  })
})
