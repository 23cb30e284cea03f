import { createHash } from 'node:crypto'
import type { Host, HostDockerEndpoint } from '../catalog/fleet.js'

/** Seals and opens secrets with the platform's encryption key (the registry passwords' box). */
export interface CredentialBox {
  seal(plain: string): string
  open(sealed: string): string
}

/** A credential's text sealed with the platform's key, as the store keeps it. */
export interface SealedText {
  sealed: string
}

type Credential = string | SealedText

/** A host added at runtime as the store keeps it: its inline credentials sealed. */
export interface StoredHost extends Omit<Host, 'docker'> {
  docker?: Omit<HostDockerEndpoint, 'sshKey' | 'tls'> & {
    sshKey?: Credential
    tls?: { ca: Credential; cert: Credential; key: Credential }
  }
}

/**
 * Whether a credential field holds the file's text itself (PEM: a TLS certificate or key, an
 * SSH private key) rather than a path on each replica.
 */
export function isInlineCredential(value: string): boolean {
  return value.trimStart().startsWith('-----BEGIN ')
}

/**
 * What diffs and messages show in place of a credential's text: never the text, a short
 * digest of it so that a changed credential shows as changed.
 */
export function credentialMark(value: string): string {
  return `(inline, sealed, sha256 ${createHash('sha256').update(value).digest('hex').slice(0, 12)})`
}

function mapCredentials<From, To>(
  docker: {
    url: string
    knownHosts?: string
    dataDisk?: string
    sshKey?: From
    tls?: { ca: From; cert: From; key: From }
  },
  each: (value: From) => To,
) {
  return {
    url: docker.url,
    ...(docker.sshKey === undefined ? {} : { sshKey: each(docker.sshKey) }),
    ...(docker.knownHosts === undefined ? {} : { knownHosts: docker.knownHosts }),
    ...(docker.dataDisk === undefined ? {} : { dataDisk: docker.dataDisk }),
    ...(docker.tls === undefined
      ? {}
      : {
          tls: {
            ca: each(docker.tls.ca),
            cert: each(docker.tls.cert),
            key: each(docker.tls.key),
          },
        }),
  }
}

/** The host as the store keeps it: every inline credential sealed; paths stay as they are. */
export function sealCredentials(host: Host, box: CredentialBox): StoredHost {
  if (!host.docker) return host
  const docker = mapCredentials<string, Credential>(host.docker, (value) =>
    isInlineCredential(value) ? { sealed: box.seal(value) } : value,
  )
  return { ...host, docker }
}

/** The stored host with its sealed credentials opened, for the engine's connection. */
export function openCredentials(stored: StoredHost, box: CredentialBox): Host {
  if (!stored.docker) return stored as Host
  const docker = mapCredentials<Credential, string>(stored.docker, (value) =>
    typeof value === 'string' ? value : box.open(value.sealed),
  )
  return { ...stored, docker }
}

/** The host with each inline credential's text replaced, for diffs and messages. */
export function withoutCredentialText(host: Host): Host {
  if (!host.docker) return host
  const docker = mapCredentials<string, string>(host.docker, (value) =>
    isInlineCredential(value) ? credentialMark(value) : value,
  )
  return { ...host, docker }
}
