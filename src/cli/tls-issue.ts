import { generateKeyPairSync } from 'node:crypto'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { ApiClient } from '../client/api-client.js'
import { UsageError } from './usage-error.js'

/** Where the host's engine listens when `--tls` names no port: Docker's TLS port. */
const DOCKER_TLS_PORT = 2376
/** Where the setup lines tell the operator to put the files on the host. */
const ON_HOST = '/etc/docker/podyard-tls'

interface Issued {
  ca: string
  serverCertificate: string
  clientCertificate: string
  notAfter: string
}

export interface HostTls {
  /** tcp://address:port, the host's engine. */
  dockerUrl: string
  /** podyard's client credentials, sent in the host's entry (sealed there). */
  tls: { ca: string; cert: string; key: string }
  /** What to do on the host, for the operator. */
  setup: string[]
}

/** `address:port`, `address` or `[v6]:port` of `--tls`. */
function targetOf(target: string): { address: string; port: number } {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]\s]+)(?::(\d{1,5}))?$/i.exec(target.trim())
  const port = Number(match?.[2] ?? DOCKER_TLS_PORT)
  if (!match?.[1] || port < 1 || port > 65_535)
    throw new UsageError(
      `--tls: "${target}" is not host, host:port or [ipv6]:port (e.g. --tls 10.0.0.14:2376)`,
    )
  return { address: match[1].replace(/^\[|\]$/g, ''), port }
}

/**
 * `podyard hosts add|update <host> --tls <address[:port]>` (docs/fleet.md, "TLS issued by
 * podyard"): makes two key pairs here, has podyard's authority sign the engine's server
 * certificate and podyard's client certificate, writes the engine's files into `outDir` (its
 * key never leaves this machine but into that folder) and gives the client credentials for
 * the host's entry and the lines that say how to start the engine.
 */
export async function issueHostTls(
  client: ApiClient,
  hostId: string,
  target: string,
  options: { outDir?: string; names?: string },
): Promise<HostTls> {
  const { address, port } = targetOf(target)
  const dir = path.resolve(options.outDir ?? `${hostId}-tls`)
  const files = {
    ca: path.join(dir, 'ca.pem'),
    cert: path.join(dir, 'server-cert.pem'),
    key: path.join(dir, 'server-key.pem'),
  }
  const taken = Object.values(files).filter((file) => existsSync(file))
  if (taken.length > 0)
    throw new UsageError(
      `--tls: ${taken.join(', ')} already exist${taken.length === 1 ? 's' : ''}: move them away or give --tls-out <dir>`,
    )
  const names = (options.names ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean)
  const pair = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  const server = pair()
  const platform = pair()
  const publicPem = (key: typeof server.publicKey) =>
    key.export({ type: 'spki', format: 'pem' }).toString()
  const issued = await client.request<Issued>('POST', '/v2/admin/host-certificates', {
    hostId,
    addresses: [address, ...names],
    serverPublicKey: publicPem(server.publicKey),
    clientPublicKey: publicPem(platform.publicKey),
  })
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  writeFileSync(files.ca, issued.ca, { mode: 0o644 })
  writeFileSync(files.cert, issued.serverCertificate, { mode: 0o644 })
  writeFileSync(files.key, server.privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  })
  const host = address.includes(':') ? `[${address}]` : address
  return {
    dockerUrl: `tcp://${host}:${port}`,
    tls: {
      ca: issued.ca,
      cert: issued.clientCertificate,
      key: platform.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    },
    setup: [
      `issued by podyard's host CA, valid until ${issued.notAfter}: ${files.ca}, ${files.cert}, ${files.key}`,
      `on ${address}: copy the three files to ${ON_HOST}/ (server-key.pem mode 600, owned by root) and start dockerd with`,
      `  --tlsverify --tlscacert=${ON_HOST}/ca.pem --tlscert=${ON_HOST}/server-cert.pem --tlskey=${ON_HOST}/server-key.pem -H tcp://0.0.0.0:${port}`,
      `(or the same as "tlsverify", "tlscacert", "tlscert", "tlskey" and "hosts" in /etc/docker/daemon.json); it then accepts podyard's client certificate only`,
    ],
  }
}
