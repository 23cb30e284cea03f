import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { AppError } from '../../shared/app-error.js'
import {
  CertificateRequestError,
  issueLeaf,
  selfSignedAuthority,
  type Authority,
} from '../../shared/x509-certificates.js'
import type { CredentialBox } from './host-credentials.js'

/** Where the authority lives: the platform's settings, shared by every replica. */
export interface AuthoritySettings {
  get(key: string): Promise<string | undefined>
  /** Two replicas racing to make the authority keep the first one's. */
  setIfAbsent(key: string, value: string): Promise<void>
}

export const HOST_CA_SETTING = 'host-tls-authority'
const CA_NAME = 'podyard host CA'
const DAY_MS = 86_400_000
/** The CA outlives many leaf rotations; a new CA means new certificates on every host. */
export const CA_LIFETIME_DAYS = 3650
/** Leaf certificates: re-issue with `podyard hosts update <host> --tls-issue` before then. */
export const LEAF_LIFETIME_DAYS = 730
/** Clocks of the hosts may be behind the platform's. */
const BACKDATE_MS = 3_600_000
export const MAX_ADDRESSES = 16

export interface HostCertificateRequest {
  hostId: string
  /** The IP addresses and DNS names the host's engine is reached at. */
  addresses: string[]
  /** The public keys, PEM: the keys themselves stay where they were made. */
  serverPublicKey: string
  clientPublicKey: string
}

export interface IssuedHostCertificates {
  /** The authority's certificate: the host's `--tlscacert`, and the platform's trust for it. */
  ca: string
  /** For the host's engine (`--tlscert`): server authentication only. */
  serverCertificate: string
  /** For podyard to reach the engine: client authentication only. */
  clientCertificate: string
  notAfter: string
}

/**
 * The certificate authority podyard keeps for its hosts' Docker engines (docs/fleet.md,
 * "TLS issued by podyard"): made on first use, its key sealed with the platform's encryption
 * key. It signs public keys made by the operator's CLI, so that no private key passes through
 * the platform but the client key the host's entry already keeps sealed.
 */
export class HostCertificateService {
  constructor(
    private readonly deps: { settings: AuthoritySettings; box: CredentialBox; now: () => Date },
  ) {}

  async caCertificate(): Promise<string> {
    return (await this.authority()).certificate
  }

  async issue(request: HostCertificateRequest): Promise<IssuedHostCertificates> {
    const addresses = [...new Set(request.addresses.map((a) => a.trim()).filter(Boolean))]
    if (addresses.length === 0)
      throw invalid('addresses: name at least one IP address or DNS name of the host')
    if (addresses.length > MAX_ADDRESSES)
      throw invalid(`addresses: at most ${MAX_ADDRESSES}, got ${addresses.length}`)
    const serverKey = publicKeyOf(request.serverPublicKey, 'serverPublicKey')
    const clientKey = publicKeyOf(request.clientPublicKey, 'clientPublicKey')
    const authority = await this.authority()
    const now = this.deps.now()
    const notBefore = new Date(now.getTime() - BACKDATE_MS)
    const notAfter = new Date(now.getTime() + LEAF_LIFETIME_DAYS * DAY_MS)
    try {
      return {
        ca: authority.certificate,
        serverCertificate: issueLeaf(authority, {
          use: 'server',
          addresses,
          commonName: request.hostId,
          publicKey: serverKey,
          notBefore,
          notAfter,
        }),
        clientCertificate: issueLeaf(authority, {
          use: 'client',
          commonName: 'podyard',
          publicKey: clientKey,
          notBefore,
          notAfter,
        }),
        notAfter: notAfter.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      }
    } catch (error) {
      if (error instanceof CertificateRequestError) throw invalid(`addresses: ${error.message}`)
      throw error
    }
  }

  /** The stored authority, or a new one (the first replica's, when two make one at once). */
  private async authority(): Promise<Authority> {
    const stored = await this.deps.settings.get(HOST_CA_SETTING)
    if (stored !== undefined) return this.open(stored)
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    const now = this.deps.now()
    const certificate = selfSignedAuthority({
      commonName: CA_NAME,
      publicKey: pair.publicKey,
      key: pair.privateKey,
      notBefore: new Date(now.getTime() - BACKDATE_MS),
      notAfter: new Date(now.getTime() + CA_LIFETIME_DAYS * DAY_MS),
    })
    const key = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
    await this.deps.settings.setIfAbsent(
      HOST_CA_SETTING,
      JSON.stringify({ certificate, key: this.deps.box.seal(key) }),
    )
    const kept = await this.deps.settings.get(HOST_CA_SETTING)
    if (kept === undefined) throw new Error(`the setting ${HOST_CA_SETTING} was not written`)
    return this.open(kept)
  }

  private open(stored: string): Authority {
    const { certificate, key } = JSON.parse(stored) as { certificate: string; key: string }
    return { certificate, key: createPrivateKey(this.deps.box.open(key)) }
  }
}

const invalid = (message: string) => new AppError('VALIDATION_FAILED', message)

/** An EC (P-256, P-384) or RSA (2048 bits or more) public key in PEM. */
function publicKeyOf(pem: string, field: string): KeyObject {
  if (pem.includes('PRIVATE KEY'))
    throw invalid(
      `${field}: a private key was sent; send its public key only (the private key stays where it was made)`,
    )
  let key: KeyObject
  try {
    key = createPublicKey(pem)
  } catch {
    throw invalid(`${field}: not a public key in PEM (-----BEGIN PUBLIC KEY-----)`)
  }
  const details = key.asymmetricKeyDetails ?? {}
  const fits =
    (key.asymmetricKeyType === 'ec' &&
      ['prime256v1', 'secp384r1'].includes(details.namedCurve ?? '')) ||
    (key.asymmetricKeyType === 'rsa' && (details.modulusLength ?? 0) >= 2048)
  if (!fits)
    throw invalid(
      `${field}: an EC key on P-256 or P-384, or an RSA key of 2048 bits or more (got ${key.asymmetricKeyType ?? 'an unknown type'})`,
    )
  return key
}
