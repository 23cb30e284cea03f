import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../support/cli.js'
import { until } from '../support/until.js'

const run = promisify(execFile)
/**
 * Opt-in (about two minutes, more the first time): builds a Debian base with debootstrap, then
 * podyard's image from this checkout, with a Docker engine and no registry.
 */
const BUILD = process.env.PODYARD_TEST_IMAGE_BUILD === '1'
const IMAGE = 'podyard:image-test'
const KEY = 'pyd_image-test-admin-key-0123456789'

describe.runIf(BUILD)("podyard's image (Dockerfile)", () => {
  let container: string | undefined
  afterAll(async () => {
    if (container) await run('docker', ['rm', '-f', container]).catch(() => undefined)
  })

  it(
    'builds from a local Debian base, serves the API and stops at once on SIGTERM',
    { timeout: 900_000 },
    async () => {
      const base = (await run('bash', [path.join(repoRoot, 'deploy', 'base-image.sh')])).stdout
      const built = await run('bash', [path.join(repoRoot, 'deploy', 'build-image.sh')], {
        // dist/ is built (npm install, the suite's global setup); rebuilding it here would
        // rewrite files other suites are running from at the same time.
        env: { ...process.env, BASE_IMAGE: base.trim(), IMAGE, SKIP_BUILD: '1' },
        maxBuffer: 16 * 1024 * 1024,
      })
      expect(built.stdout.trim()).toBe(IMAGE)

      container = (
        await run('docker', [
          'run',
          '-d',
          '-p',
          '127.0.0.1::8080',
          '-e',
          'PODYARD_FLEET=none',
          '-e',
          `PODYARD_ADMIN_KEY=${KEY}`,
          IMAGE,
        ])
      ).stdout.trim()
      const published = (await run('docker', ['port', container, '8080'])).stdout
      const url = `http://127.0.0.1:${/:(\d+)/.exec(published)![1]}`
      await until(
        'the container is ready',
        // Each probe bounded: a connection docker-proxy accepts before the server listens
        // can stay open with no answer.
        async () =>
          (
            await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(
              () => undefined,
            )
          )?.status,
        (status) => status === 200,
        60_000,
      )
      expect(await (await fetch(`${url}/healthz`)).json()).toMatchObject({ status: 'ok' })
      const account = await fetch(`${url}/v2/account`, {
        headers: { authorization: `Bearer ${KEY}` },
      })
      expect(account.status).toBe(200)
      expect((await fetch(`${url}/v2/openapi.json`)).status).toBe(200)

      const stopping = Date.now()
      await run('docker', ['stop', '--time', '20', container])
      expect(Date.now() - stopping).toBeLessThan(10_000)
      const exit = await run('docker', ['inspect', '-f', '{{.State.ExitCode}}', container])
      expect(exit.stdout.trim()).toBe('0')
    },
  )
})
