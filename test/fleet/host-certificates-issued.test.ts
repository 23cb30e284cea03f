import { generateKeyPairSync, X509Certificate } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { connect, type TLSSocket } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { makeCertificates } from '../support/test-certificates.js'

/**
 * TLS issued by podyard (docs/fleet.md): the authority it keeps signs a host engine's server
 * certificate and podyard's client certificate for it, from public keys only. The "engine" is
 * a TLS server on 127.0.0.1 that asks for a client certificate signed by that authority and
 * records the one presented; it starts with a stand-in certificate and takes the issued one
 * once `podyard hosts add --tls` has written it.
 */
interface Issued {
  ca: string
  serverCertificate: string
  clientCertificate: string
  notAfter: string
}

const publicPem = () => {
  const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  return {
    pair,
    pem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  }
}

describe('host engine certificates issued by podyard', () => {
  let dir: string
  let platform: TestPlatform
  let member = ''
  let engine: Server
  let port = 0
  const presented: Array<{ subject: string; issuer: string; fingerprint: string }> = []
  const issue = (body: unknown, key = TEST_ADMIN_KEY) =>
    platform.call('/v2/admin/host-certificates', { method: 'POST', json: body, key })

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-issued-tls-'))
    const standIn = makeCertificates(dir)
    engine = createServer(
      { ...standIn.engine, ca: standIn.ca, requestCert: true, rejectUnauthorized: true },
      (request, response) => {
        const peer = (request.socket as TLSSocket).getPeerCertificate()
        presented.push({
          subject: String(peer.subject?.CN ?? ''),
          issuer: String(peer.issuer?.CN ?? ''),
          fingerprint: peer.fingerprint256,
        })
        response.writeHead(500).end('{"message":"not an engine"}')
      },
    )
    await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', resolve))
    port = (engine.address() as AddressInfo).port
    platform = await startTestPlatform({
      hosts: { probeIntervalMs: 200, probeTimeoutMs: 2_000, failuresBeforeDown: 1 },
    })
    member = await otherAccountKey(platform, 'issued-tls@example.com')
  }, 60_000)

  afterAll(async () => {
    await platform?.close()
    await new Promise((resolve) => engine?.close(resolve))
    engine?.closeAllConnections()
    rmSync(dir, { recursive: true, force: true })
  })

  it('signs a server and a client certificate from public keys, with one kept authority', async () => {
    const server = publicPem()
    const client = publicPem()
    const body = {
      hostId: 'gpu-node-9',
      addresses: ['127.0.0.1', 'gpu-node-9.example.internal'],
      serverPublicKey: server.pem,
      clientPublicKey: client.pem,
    }
    const refused = await issue(body, member)
    expect(refused.status).toBe(403)

    const issued = await json<Issued>(await issue(body), 201)
    const ca = new X509Certificate(issued.ca)
    const serverCert = new X509Certificate(issued.serverCertificate)
    const clientCert = new X509Certificate(issued.clientCertificate)
    expect(ca.ca).toBe(true)
    expect(ca.subject).toContain('CN=podyard host CA')
    for (const cert of [serverCert, clientCert]) {
      expect(cert.ca).toBe(false)
      expect(cert.checkIssued(ca)).toBe(true)
      expect(cert.verify(ca.publicKey)).toBe(true)
      expect(new Date(cert.validTo).toISOString().slice(0, 16)).toBe(issued.notAfter.slice(0, 16))
    }
    expect(serverCert.subject).toContain('CN=gpu-node-9')
    expect(serverCert.subjectAltName).toBe('IP Address:127.0.0.1, DNS:gpu-node-9.example.internal')
    expect(serverCert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1'])
    expect(serverCert.publicKey.export({ type: 'spki', format: 'pem' })).toBe(server.pem)
    expect(clientCert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2'])
    expect(clientCert.publicKey.export({ type: 'spki', format: 'pem' })).toBe(client.pem)

    // The same authority for every host, and its key sealed in the database.
    const again = await json<Issued>(await issue({ ...body, hostId: 'gpu-node-10' }), 201)
    expect(again.ca).toBe(issued.ca)
    const shown = await json<{ ca: string }>(await platform.call('/v2/admin/host-certificates/ca'))
    expect(shown.ca).toBe(issued.ca)
    expect((await platform.call('/v2/admin/host-certificates/ca', { key: member })).status).toBe(
      403,
    )
    const stored = await platform.store.db
      .selectFrom('settings')
      .select('value')
      .where('key', '=', 'host-tls-authority')
      .executeTakeFirstOrThrow()
    expect(stored.value).not.toContain('PRIVATE KEY')
    expect((JSON.parse(stored.value) as { key: string }).key).toMatch(/^v1:[^:]+:[^:]+:[^:]+$/)
  })

  it('refuses what is not a public key, or not an address', async () => {
    const good = { hostId: 'h', addresses: ['10.0.0.4'], clientPublicKey: publicPem().pem }
    const cases: Array<[unknown, number, string]> = [
      [{ ...good, serverPublicKey: 'hello' }, 422, 'serverPublicKey: not a public key in PEM'],
      [
        {
          ...good,
          serverPublicKey: publicPem()
            .pair.privateKey.export({ type: 'pkcs8', format: 'pem' })
            .toString(),
        },
        422,
        'send its public key only',
      ],
      [
        {
          ...good,
          serverPublicKey: generateKeyPairSync('rsa', { modulusLength: 1024 })
            .publicKey.export({ type: 'spki', format: 'pem' })
            .toString(),
        },
        422,
        'RSA key of 2048 bits or more',
      ],
      [
        { ...good, addresses: ['not a host!'], serverPublicKey: publicPem().pem },
        422,
        'is neither an IP address nor a DNS name',
      ],
      [{ ...good, addresses: [], serverPublicKey: publicPem().pem }, 422, 'addresses'],
    ]
    for (const [body, status, text] of cases) {
      const response = await issue(body)
      const problem = await response.text()
      expect(response.status, problem).toBe(status)
      expect(response.headers.get('content-type')).toContain('application/problem+json')
      expect(problem).toContain(text)
    }
  })

  it('podyard hosts add --tls issues both, writes the engine files and reaches the engine with them', async () => {
    const flags = ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
    const out = path.join(dir, 'gpu-node-7-tls')
    const add = () =>
      runCli([
        'hosts',
        'add',
        'gpu-node-7',
        '--tls',
        `127.0.0.1:${port}`,
        '--tls-out',
        out,
        '--data-center',
        'EU-RO-1',
        '--cpu-flavors',
        'cpu3c',
        '--vcpus',
        '2',
        '--memory-gb',
        '4',
        ...flags,
      ])
    const added = await add()
    expect(added.code, added.stderr).toBe(0)
    expect(added.stdout).toContain(
      `--tlsverify --tlscacert=/etc/docker/podyard-tls/ca.pem --tlscert=/etc/docker/podyard-tls/server-cert.pem --tlskey=/etc/docker/podyard-tls/server-key.pem -H tcp://0.0.0.0:${port}`,
    )
    expect(added.stdout).toContain(`host gpu-node-7 added (tcp://127.0.0.1:${port})`)
    expect(statSync(path.join(out, 'server-key.pem')).mode & 0o777).toBe(0o600)
    // podyard's client key is in the host's entry only, sealed: not in the folder, not printed.
    expect(added.stdout).not.toContain('PRIVATE KEY')
    expect(existsSync(path.join(out, 'client-key.pem'))).toBe(false)

    const files = (folder: string) => ({
      ca: readFileSync(path.join(folder, 'ca.pem'), 'utf8'),
      cert: readFileSync(path.join(folder, 'server-cert.pem'), 'utf8'),
      key: readFileSync(path.join(folder, 'server-key.pem'), 'utf8'),
    })
    const first = files(out)
    engine.setSecureContext(first)
    const reached = async (count: number) => {
      const deadline = Date.now() + 20_000
      while (presented.length < count && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 100))
      return presented.at(-1)
    }
    const before = presented.length
    const seen = await reached(before + 1)
    expect(seen?.subject).toBe('podyard')
    expect(seen?.issuer).toBe('podyard host CA')

    // The engine's own certificate does not log in as a client: its usage is the server's.
    const asClient = connect({
      host: '127.0.0.1',
      port,
      ca: first.ca,
      cert: first.cert,
      key: first.key,
    })
    const outcome = await new Promise<string>((resolve) => {
      asClient.once('secureConnect', () => {
        asClient.write('GET /_ping HTTP/1.1\r\nHost: x\r\n\r\n')
      })
      asClient.once('data', () => resolve('answered'))
      asClient.once('error', (error) => resolve(`refused: ${error.message}`))
      asClient.once('close', () => resolve('closed'))
    })
    asClient.destroy()
    expect(outcome).not.toBe('answered')

    // A --tls that is no address, or beside --docker-url, is a usage error; nothing is sent.
    for (const wrong of [
      ['--tls', 'not a host!'],
      ['--tls', '127.0.0.1', '--docker-url', 'tcp://127.0.0.1:2376'],
    ]) {
      const refused = await runCli(['hosts', 'add', 'gpu-node-8', ...wrong, ...flags])
      expect(refused.code, refused.stderr).toBe(2)
      expect(refused.stderr).toContain('--tls')
    }

    // Files already there are never overwritten; nothing is added.
    const again = await add()
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('already exist')

    // update --tls rotates both: the engine takes the new files, podyard presents its new certificate.
    const rotatedOut = path.join(dir, 'rotated')
    const updated = await runCli([
      'hosts',
      'update',
      'gpu-node-7',
      '--tls',
      `127.0.0.1:${port}`,
      '--tls-out',
      rotatedOut,
      ...flags,
    ])
    expect(updated.code, updated.stderr).toBe(0)
    expect(updated.stdout).toContain('host gpu-node-7 updated')
    engine.setSecureContext(files(rotatedOut))
    const deadline = Date.now() + 20_000
    while (!presented.some((p) => p.fingerprint !== seen?.fingerprint) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100))
    const rotated = presented.find((p) => p.fingerprint !== seen?.fingerprint)
    expect(rotated?.subject).toBe('podyard')
    expect(rotated?.issuer).toBe('podyard host CA')

    expect((await runCli(['hosts', 'remove', 'gpu-node-7', ...flags])).code).toBe(0)
  }, 120_000)
})
