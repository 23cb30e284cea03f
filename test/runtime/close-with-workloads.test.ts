import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { startPlatform, type Platform } from '../../src/platform.js'
import { EU_SE_1, fleetYaml, gpuHost } from '../support/fleet-yaml.js'
import { callPlatform, testConfig } from '../support/platform.js'

/**
 * A server stopped with its workloads (`podyard dev`'s stop, docs/dev.md) while one of its
 * engines does not answer (a machine down, its certificates changed): the other engines'
 * workloads are removed, the server lets go of its data dir, and the stop says which engine
 * kept its workloads. Found in CI, where a replica that had not yet let go of a removed host's
 * engine (reached over TLS with certificates since replaced) failed its stop.
 */
describe('stopping a server with its workloads while an engine does not answer', () => {
  let dir: string | undefined
  let restarted: Platform | undefined

  afterEach(async () => {
    await restarted?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('still lets go of the server and its data dir, and says what it could not remove', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-close-with-workloads-'))
    const socket = path.join(dir, 'no-engine.sock')
    writeFileSync(
      path.join(dir, 'fleet.yaml'),
      fleetYaml({
        dataCenters: [EU_SE_1],
        hosts: [
          gpuHost('unanswering', 'NVIDIA L4', 1, {
            driver: 'docker',
            simulated: false,
            docker: { url: `unix://${socket}` },
          }),
        ],
      }),
    )
    const config = testConfig(dir, { fleet: path.join(dir, 'fleet.yaml') })
    const quiet = { logger: pino({ level: 'silent' }) }
    const platform = await startPlatform(config, quiet)
    expect((await callPlatform(platform.url, '/v2/admin/hosts/unanswering')).status).toBe(200)

    await expect(platform.closeWithWorkloads()).rejects.toThrow(
      new RegExp(`could not remove the workloads of an engine: .*${socket}`),
    )
    // Let go of: its port answers no more, and the next start on the same data dir serves.
    await expect(fetch(`${platform.url}/healthz`)).rejects.toThrow()
    restarted = await startPlatform(config, quiet)
    expect((await callPlatform(restarted.url, '/v2/admin/hosts/unanswering')).status).toBe(200)
  })
})
