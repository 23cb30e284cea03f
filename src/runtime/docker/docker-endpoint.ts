import { createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Agent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import type Docker from 'dockerode'
import { SshEngineAgent } from './engine-agents.js'

/** A host's engine as the fleet declares it (the fleet file's `docker:`). */
export interface DockerEndpoint {
  url: string
  sshKey?: string
  knownHosts?: string
  tls?: { ca: string; cert: string; key: string }
}

/** dockerode's options with the agent docker-modem takes (its type leaves it out). */
export type EngineConnectionOptions = Docker.DockerOptions & { agent?: Agent }

/** How long connecting to a remote engine may take before the call fails. */
export const ENGINE_CONNECT_TIMEOUT_MS = 10_000

/** An endpoint whose files cannot be used: the host is DOWN with this message. */
export class DockerEndpointError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'DockerEndpointError'
  }
}

/**
 * A credential's bytes: the text itself when given inline (PEM, as hosts added at runtime keep
 * it, sealed in the database), else the file it names. Messages name the file, never the text.
 */
function readFile(file: string, what: string): Buffer {
  if (file.trimStart().startsWith('-----BEGIN ')) return Buffer.from(file, 'utf8')
  try {
    return readFileSync(file)
  } catch (error) {
    throw new DockerEndpointError(`cannot read the ${what} ${file}: ${(error as Error).message}`)
  }
}

/**
 * The host keys known_hosts holds for `host` on `port`, in their wire form (what ssh2 hands to
 * a hostVerifier). Names are matched as OpenSSH does: `name` for port 22, `[name]:port`
 * otherwise, in plain or hashed (`|1|salt|hash`) form. Markers (@revoked, @cert-authority) and
 * patterns with wildcards are not supported: such lines never match.
 */
export function knownHostKeys(knownHosts: string, host: string, port: number): Buffer[] {
  const name = port === 22 ? host : `[${host}]:${port}`
  const keys: Buffer[] = []
  for (const raw of knownHosts.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith('@')) continue
    const [names, , key] = line.split(/\s+/)
    if (!names || !key) continue
    const matches = names.split(',').some((entry) => {
      if (!entry.startsWith('|1|')) return entry === name
      const [, , salt, hash] = entry.split('|')
      if (!salt || !hash) return false
      const digest = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64')
      return digest === hash
    })
    if (matches) keys.push(Buffer.from(key, 'base64'))
  }
  return keys
}

/**
 * dockerode options that reach a host's engine over its transport, files read now. SSH checks
 * the host key against known_hosts (ssh2 alone accepts any key); TLS checks the engine's
 * certificate against the CA and presents the client certificate. Throws DockerEndpointError.
 */
export function dockerConnectionOf(endpoint: DockerEndpoint): EngineConnectionOptions {
  const url = new URL(endpoint.url)
  if (url.protocol === 'unix:') return { socketPath: decodeURIComponent(url.pathname) }
  if (url.protocol === 'ssh:') {
    const port = url.port === '' ? 22 : Number(url.port)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const known = knownHostKeys(
      readFile(endpoint.knownHosts ?? '', 'known_hosts file').toString('utf8'),
      host,
      port,
    )
    if (known.length === 0)
      throw new DockerEndpointError(
        `${endpoint.knownHosts} has no key for ${port === 22 ? host : `[${host}]:${port}`}`,
      )
    // The agent owns the SSH connections, so that closing the driver ends them (docker-modem's
    // own SSH transport keeps them out of reach).
    return {
      protocol: 'http',
      host,
      port,
      agent: new SshEngineAgent({
        host,
        port,
        username: decodeURIComponent(url.username),
        privateKey: readFile(endpoint.sshKey ?? '', 'SSH private key'),
        hostVerifier: (key: Buffer) => known.some((k) => k.equals(key)),
        readyTimeout: ENGINE_CONNECT_TIMEOUT_MS,
      }),
    }
  }
  const tls = endpoint.tls
  if (!tls) throw new DockerEndpointError(`${endpoint.url}: tcp:// needs tls`)
  const credentials = {
    ca: readFile(tls.ca, 'TLS CA certificate'),
    cert: readFile(tls.cert, 'TLS client certificate'),
    key: readFile(tls.key, 'TLS client key'),
  }
  return {
    protocol: 'https',
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port),
    ...credentials,
    // The engine's own agent (not Node's global one): closing the driver closes its sockets.
    agent: new HttpsAgent({ keepAlive: true, ...credentials }),
  }
}
