import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, copyFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { gzipSync } from 'node:zlib'

/**
 * A container registry on 127.0.0.1 (Docker pulls from loopback registries over plain HTTP)
 * or another address (below)
 * serving one image, `podyard-test/pulled:1` (or the one given), behind basic auth: enough of the Registry HTTP
 * API v2 for `docker pull` to succeed with the right credentials and fail, as against a real
 * registry, with wrong ones or for an unknown repository.
 */
export interface FakeRegistry {
  /** `127.0.0.1:<port>` */
  host: string
  /** The image it serves, as a pod names it. */
  image: string
  username: string
  password: string
  close(): Promise<void>
}

const MANIFEST_TYPE = 'application/vnd.docker.distribution.manifest.v2+json'

function digest(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

/** An image the registry serves: one layer (a root filesystem as a tar) and its config. */
export interface ServedImage {
  /** The repository, e.g. `podyard-test/worker`; the tag is `1`. */
  repository: string
  tar: Buffer
  config: { Env: string[]; Cmd: string[] }
}

/** One layer: busybox as /bin/sh; the image prints `pulled image ran` and idles. */
function busyboxImage(busybox: string): ServedImage {
  const root = mkdtempSync(path.join(tmpdir(), 'podyard-fake-image-'))
  try {
    mkdirSync(path.join(root, 'bin'))
    copyFileSync(busybox, path.join(root, 'bin', 'busybox'))
    for (const applet of ['sh', 'echo', 'sleep']) {
      symlinkSync('busybox', path.join(root, 'bin', applet))
    }
    const tar = execFileSync('tar', ['-C', root, '-c', 'bin'], { maxBuffer: 64 * 1024 * 1024 })
    return {
      repository: 'podyard-test/pulled',
      tar,
      config: {
        Env: ['PATH=/bin'],
        Cmd: ['/bin/sh', '-c', 'echo pulled image ran; exec sleep 2147483647'],
      },
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

function manifestOf(image: ServedImage): { manifest: Buffer; blobs: Map<string, Buffer> } {
  const { tar } = image
  // A fast level: the worker image's layer holds node (about 100 MB).
  const layer = gzipSync(tar, { level: 1 })
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: image.config,
      rootfs: { type: 'layers', diff_ids: [digest(tar)] },
    }),
  )
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MANIFEST_TYPE,
      config: {
        mediaType: 'application/vnd.docker.container.image.v1+json',
        size: config.length,
        digest: digest(config),
      },
      layers: [
        {
          mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
          size: layer.length,
          digest: digest(layer),
        },
      ],
    }),
  )
  return {
    manifest,
    blobs: new Map([
      [digest(config), config],
      [digest(layer), layer],
    ]),
  }
}

/**
 * `blobDelayMs` holds each blob back, so that a test can watch a pull in progress. `address`:
 * where it listens (default 127.0.0.1; an engine pulls over plain HTTP from another address
 * only where its `insecure-registries` names it, as the multi-host rig's engines do for the rig
 * bridge's).
 */
export async function startFakeRegistry(
  options: { blobDelayMs?: number; busybox?: string; image?: ServedImage; address?: string } = {},
): Promise<FakeRegistry> {
  const busybox = options.busybox ?? '/bin/busybox'
  const username = 'puller'
  const password = `registry-secret-${process.pid}`
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`
  const served = options.image ?? busyboxImage(busybox)
  const repository = served.repository
  const { manifest, blobs } = manifestOf(served)
  const manifestDigest = digest(manifest)

  const server: Server = createServer((request, response) => {
    const url = request.url ?? '/'
    const error = (status: number, code: string, message: string): void => {
      if (status === 401) response.setHeader('www-authenticate', 'Basic realm="podyard-test"')
      response.writeHead(status, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ errors: [{ code, message }] }))
    }
    if (request.headers.authorization !== expected) {
      return error(401, 'UNAUTHORIZED', 'authentication required')
    }
    if (url === '/v2/' || url === '/v2') {
      response.writeHead(200, { 'content-type': 'application/json' })
      return response.end('{}')
    }
    const match = /^\/v2\/(.+)\/(manifests|blobs)\/([^/?]+)$/.exec(url)
    if (!match) return error(404, 'NOT_FOUND', 'not found')
    const [, name, kind, reference] = match
    if (name !== repository) return error(404, 'NAME_UNKNOWN', 'repository name not known')
    if (kind === 'manifests') {
      if (reference !== '1' && reference !== manifestDigest) {
        return error(404, 'MANIFEST_UNKNOWN', 'manifest unknown')
      }
      response.writeHead(200, {
        'content-type': MANIFEST_TYPE,
        'content-length': manifest.length,
        'docker-content-digest': manifestDigest,
      })
      return response.end(request.method === 'HEAD' ? undefined : manifest)
    }
    const blob = blobs.get(reference!)
    if (!blob) return error(404, 'BLOB_UNKNOWN', 'blob unknown')
    setTimeout(() => {
      response.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': blob.length,
        'docker-content-digest': reference!,
      })
      response.end(request.method === 'HEAD' ? undefined : blob)
    }, options.blobDelayMs ?? 0)
  })
  const address = options.address ?? '127.0.0.1'
  await new Promise<void>((resolve) => server.listen(0, address, resolve))
  const host = `${address}:${(server.address() as AddressInfo).port}`
  return {
    host,
    image: `${host}/${repository}:1`,
    username,
    password,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
