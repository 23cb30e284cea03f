import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  existsSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import type Docker from 'dockerode'

/**
 * The test worker image: a root filesystem with busybox, this machine's node (with the shared
 * libraries it links) and the TypeScript worker SDK's compiled JavaScript, running
 * test/fixtures/container-worker.mjs. Built locally (no registry is reachable), loaded into
 * an engine with `docker import`, or served by test/support/fake-registry.ts as one layer.
 */

const ROOT = path.resolve(import.meta.dirname, '..', '..')

/**
 * Where the worker SDK's compiled JavaScript is (built by the suites' global setup): the one
 * place to change when the SDK moves (packages/worker). The whole directory is copied to
 * /opt/worker-sdk, whose index.js the program imports.
 */
export const WORKER_SDK_DIST = path.join(ROOT, 'dist', 'sdk', 'worker')
const PROGRAM = path.join(ROOT, 'test', 'fixtures', 'container-worker.mjs')
const BUSYBOX = '/bin/busybox'

export const WORKER_IMAGE = 'podyard-test/worker:1'
/** The image's label naming what it was built from, so that an engine that has it is not loaded again. */
const BUILD_LABEL = 'podyard.test-worker'

export const WORKER_IMAGE_CONFIG = {
  Env: ['PATH=/usr/bin:/bin'],
  Cmd: ['/usr/bin/node', '/opt/worker/worker.mjs'],
}

let built: { tar: Buffer; build: string } | undefined

/** What the image is made of, hashed: node, the SDK, the program. */
function buildId(node: string): string {
  const hash = createHash('sha256')
  hash.update(readFileSync(node))
  for (const file of readdirSync(WORKER_SDK_DIST, { recursive: true }).map(String).sort()) {
    const full = path.join(WORKER_SDK_DIST, file)
    if (file.endsWith('.js')) hash.update(file).update(readFileSync(full))
  }
  hash.update(readFileSync(PROGRAM))
  return hash.digest('hex').slice(0, 16)
}

/** The image's root filesystem as a tar (built once per test process). */
export function workerImageTar(): { tar: Buffer; build: string } {
  if (built) return built
  if (!existsSync(path.join(WORKER_SDK_DIST, 'index.js')))
    throw new Error(`the worker SDK is not built: no ${WORKER_SDK_DIST}/index.js`)
  const node = realpathSync(process.execPath)
  const root = mkdtempSync(path.join(tmpdir(), 'podyard-worker-image-'))
  try {
    for (const dir of ['bin', 'tmp', 'root', 'etc', 'usr/bin', 'opt/worker']) {
      mkdirSync(path.join(root, dir), { recursive: true })
    }
    execFileSync('chmod', ['1777', path.join(root, 'tmp')])
    copyFileSync(BUSYBOX, path.join(root, 'bin', 'busybox'))
    for (const applet of ['sh', 'cat', 'ls', 'sleep', 'echo']) {
      symlinkSync('busybox', path.join(root, 'bin', applet))
    }
    copyFileSync(node, path.join(root, 'usr', 'bin', 'node'))
    execFileSync('chmod', ['755', path.join(root, 'usr', 'bin', 'node')])
    const libraries = execFileSync('ldd', [node], { encoding: 'utf8' }).match(/\/[^ )]+/g) ?? []
    for (const library of libraries) {
      mkdirSync(path.join(root, path.dirname(library)), { recursive: true })
      copyFileSync(realpathSync(library), path.join(root, library))
    }
    cpSync(WORKER_SDK_DIST, path.join(root, 'opt', 'worker-sdk'), {
      recursive: true,
      filter: (source) => !source.endsWith('.d.ts') && !source.endsWith('.map'),
    })
    copyFileSync(PROGRAM, path.join(root, 'opt', 'worker', 'worker.mjs'))
    writeFileSync(path.join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\n')
    const tar = execFileSync('tar', ['-C', root, '-c', '.'], { maxBuffer: 1024 * 1024 * 1024 })
    built = { tar, build: buildId(node) }
    return built
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

/** Makes WORKER_IMAGE present in the engine (imported from the tar unless it is current). */
export async function loadWorkerImage(docker: Docker, image = WORKER_IMAGE): Promise<void> {
  const { tar, build } = workerImageTar()
  try {
    const present = await docker.getImage(image).inspect()
    if (present.Config?.Labels?.[BUILD_LABEL] === build) return
  } catch {
    // Not there yet.
  }
  const [repo, tag] = image.split(':')
  const stream = await docker.importImage(Readable.from([tar]) as unknown as string, {
    repo,
    tag,
    changes: [
      `ENV ${WORKER_IMAGE_CONFIG.Env[0]}`,
      `CMD ${JSON.stringify(WORKER_IMAGE_CONFIG.Cmd)}`,
      `LABEL ${BUILD_LABEL}=${build}`,
    ],
  })
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(
      stream,
      (error: Error | null, events: Array<{ error?: string }>) => {
        const failed = events?.find((e) => e.error)
        if (error || failed) reject(error ?? new Error(failed!.error))
        else resolve()
      },
    ),
  )
}
