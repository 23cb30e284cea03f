import { createServer, type Server } from 'node:https'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { json } from '../support/http.js'
import { makeCertificates } from '../support/test-certificates.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

/**
 * The key and certificates of a host added at runtime, given inline (PEM, as `podyard hosts
 * add --tls-*` sends them): sealed in the database row, used to reach the engine, and never in
 * an answer, a diff or the log. The "engine" is a TLS server on 127.0.0.1 that asks for a
 * client certificate and records the one presented.
 */
/** The base64 body lines of a PEM text: any of them in a text means the PEM leaked. */
const bodyLines = (pem: string) =>
  pem.split('\n').filter((line) => line.length >= 40 && !line.startsWith('-----'))

describe('credentials of a host added at runtime', () => {
  let dir: string
  let certs: ReturnType<typeof makeCertificates>
  let engine: Server
  let port = 0
  const presented: string[] = []
  let platform: TestPlatform
  let logText = ''
  let member = ''

  const expectNoSecret = (text: string, what: string) => {
    expect(text, what).not.toContain('-----BEGIN')
    for (const line of [...bodyLines(certs.client.key), ...bodyLines(certs.other.key)])
      expect(text, what).not.toContain(line)
  }
  const tlsHost = (id: string, tls: { ca: string; cert: string; key: string }) => ({
    id,
    dataCenterId: 'EU-RO-1',
    cpuFlavors: ['cpu3c'],
    vcpus: 2,
    memoryGb: 4,
    docker: { url: `tcp://127.0.0.1:${port}`, tls },
  })
  const rowOf = async (id: string) =>
    (
      await platform.store.db
        .selectFrom('hosts')
        .select('declaration')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).declaration

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-sealed-credentials-'))
    certs = makeCertificates(dir)
    engine = createServer(
      { ...certs.engine, ca: certs.ca, requestCert: true, rejectUnauthorized: true },
      (request, response) => {
        const peer = (request.socket as TLSSocket).getPeerCertificate()
        presented.push(String(peer.subject?.CN ?? ''))
        response.writeHead(500).end('{"message":"not an engine"}')
      },
    )
    await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', resolve))
    port = (engine.address() as AddressInfo).port
    const log = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logText += chunk.toString('utf8')
        done()
      },
    })
    platform = await startTestPlatform(
      { hosts: { probeIntervalMs: 200, probeTimeoutMs: 2_000, failuresBeforeDown: 1 } },
      { logger: pino({ level: 'trace' }, log) },
    )
    member = await otherAccountKey(platform, 'sealed-credentials@example.com')
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
    await new Promise((resolve) => engine?.close(resolve))
    engine?.closeAllConnections()
    rmSync(dir, { recursive: true, force: true })
  })

  it('seals inline TLS files in the database row and shows them in no answer', async () => {
    const added = await platform.call('/v2/admin/hosts', {
      method: 'POST',
      json: tlsHost('sealed-tls-1', { ca: certs.ca, ...certs.client }),
    })
    const addedText = await added.text()
    expect(added.status, addedText).toBe(201)
    expectNoSecret(addedText, 'the answer to the add')

    const row = await rowOf('sealed-tls-1')
    expectNoSecret(row, 'the database row')
    const stored = JSON.parse(row) as { docker: { tls: Record<string, { sealed: string }> } }
    for (const field of ['ca', 'cert', 'key'])
      expect(stored.docker.tls[field]?.sealed).toMatch(/^v1:[^:]+:[^:]+:[^:]+$/)

    // The sealed key reaches the engine: it presents podyard's client certificate.
    const deadline = Date.now() + 20_000
    while (!presented.includes('podyard') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100))
    expect(presented).toContain('podyard')

    for (const read of ['/v2/admin/hosts', '/v2/admin/hosts/sealed-tls-1']) {
      const response = await platform.call(read)
      const text = await response.text()
      expect(response.status, read).toBe(200)
      expectNoSecret(text, read)
    }
    // A member sees no host at all.
    expect((await platform.call('/v2/admin/hosts', { key: member })).status).toBe(403)
  }, 60_000)

  it('diffs inline credentials by digest and changes them sealed', async () => {
    const same = tlsHost('sealed-tls-1', { ca: certs.ca, ...certs.client })
    const unchanged = await json<{ changes: unknown[] }>(
      await platform.call('/v2/admin/fleet/diff', { method: 'POST', json: { hosts: [same] } }),
    )
    expect(unchanged.changes).toEqual([])

    const rotated = tlsHost('sealed-tls-1', { ca: certs.ca, ...certs.other })
    const diff = await platform.call('/v2/admin/fleet/diff', {
      method: 'POST',
      json: { hosts: [rotated] },
    })
    const diffText = await diff.text()
    expect(diff.status).toBe(200)
    expectNoSecret(diffText, 'the diff')
    expect(diffText).toMatch(/docker: .*\(inline, sealed, sha256 [0-9a-f]{12}\)/)

    const before = await rowOf('sealed-tls-1')
    const patched = await platform.call('/v2/admin/hosts/sealed-tls-1', {
      method: 'PATCH',
      json: { docker: rotated.docker },
    })
    expectNoSecret(await patched.text(), 'the answer to the update')
    expect(patched.status).toBe(200)
    const after = await rowOf('sealed-tls-1')
    expectNoSecret(after, 'the database row after the update')
    expect(after).not.toBe(before)
    const deadline = Date.now() + 20_000
    while (!presented.includes('other') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100))
    expect(presented).toContain('other')
    expect((await platform.call('/v2/admin/hosts/sealed-tls-1', { method: 'DELETE' })).status).toBe(
      204,
    )
  }, 60_000)

  it('podyard hosts add --tls-* sends the files, sealed; a file that is not PEM is refused', async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const add = (id: string, key: string) =>
      runCli([
        'hosts',
        'add',
        id,
        '--data-center',
        'EU-RO-1',
        '--vcpus',
        '2',
        '--memory-gb',
        '4',
        '--cpu-flavors',
        'cpu3c',
        '--docker-url',
        `tcp://127.0.0.1:${port}`,
        '--tls-ca',
        certs.files.ca,
        '--tls-cert',
        certs.files.cert,
        '--tls-key',
        key,
        ...flags,
      ])
    const notPem = path.join(dir, 'not-a-key.txt')
    writeFileSync(notPem, 'hello\n')
    const refused = await add('sealed-tls-cli', notPem)
    // A bad option value is a usage error (docs/cli.md, "Exit codes").
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`--tls-key: ${notPem} is not a PEM file`)

    const added = await add('sealed-tls-cli', certs.files.key)
    expect(added.code, added.stderr).toBe(0)
    expectNoSecret(added.stdout, 'the CLI output')
    const row = await rowOf('sealed-tls-cli')
    expectNoSecret(row, 'the database row of the CLI host')
    expect(row).not.toContain(certs.files.key)
    const got = await runCli(['hosts', 'get', 'sealed-tls-cli', '--json', ...flags])
    expect(got.code, got.stderr).toBe(0)
    expectNoSecret(got.stdout, 'podyard hosts get')
    expect((await runCli(['hosts', 'remove', 'sealed-tls-cli', ...flags])).code).toBe(0)
  }, 120_000)

  it('never logs the credentials', () => {
    expect(logText.length).toBeGreaterThan(0)
    expectNoSecret(logText, 'the log')
  })
})
