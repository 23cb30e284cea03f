import { createServer, type Server } from 'node:https'
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DockerDriver } from '../../src/runtime/docker/docker-driver.js'
import { dockerConnectionOf } from '../../src/runtime/docker/docker-endpoint.js'
import { makeCertificates } from '../support/test-certificates.js'

/**
 * A remote engine's driver over TCP+TLS keeps its connection open between calls (its own
 * keep-alive agent), and close() (a host removed at runtime) closes it at once: no socket to
 * the engine is left. The engine is a TLS server on 127.0.0.1 that answers the ping and asks
 * for podyard's client certificate; it counts the connections it holds.
 */
describe('closing a remote engine over TLS', () => {
  let dir: string
  let engine: Server
  let port = 0
  const openConnections = () =>
    new Promise<number>((resolve, reject) =>
      engine.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    )

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-engine-close-'))
    const certs = makeCertificates(dir)
    engine = createServer(
      { ...certs.engine, ca: certs.ca, requestCert: true, rejectUnauthorized: true },
      (_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('OK'),
    )
    await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', resolve))
    port = (engine.address() as AddressInfo).port
  }, 30_000)

  afterAll(async () => {
    engine?.closeAllConnections()
    await new Promise((resolve) => engine?.close(resolve))
    rmSync(dir, { recursive: true, force: true })
  })

  it('holds one connection while in use and none once closed', async () => {
    const files = path.join(dir)
    const url = `tcp://127.0.0.1:${port}`
    const driver = new DockerDriver({
      serverId: 'engine-close-test',
      connection: {
        options: dockerConnectionOf({
          url,
          tls: {
            ca: path.join(files, 'ca.pem'),
            cert: path.join(files, 'podyard.pem'),
            key: path.join(files, 'podyard.key'),
          },
        }),
        where: url,
      },
    })
    await driver.ping()
    await driver.ping()
    // Kept alive between calls (and reused: two pings, one connection).
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(await openConnections()).toBe(1)

    await driver.close()
    // Node's global agent would keep it 5 s more: closed means closed now.
    const deadline = Date.now() + 2_000
    while ((await openConnections()) > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await openConnections()).toBe(0)
  })
})
