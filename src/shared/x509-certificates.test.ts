import { generateKeyPairSync, X509Certificate } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CertificateRequestError, issueLeaf, selfSignedAuthority } from './x509-certificates.js'

const pair = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
const YEAR_MS = 365 * 86_400_000

describe('X.509 certificates from node:crypto', () => {
  const ca = pair()
  const now = new Date('2026-11-28T10:00:00Z')
  // Past 2049: the CA's end is a GeneralizedTime, the leaf's a UTCTime.
  const certificate = selfSignedAuthority({
    commonName: 'test CA',
    publicKey: ca.publicKey,
    key: ca.privateKey,
    notBefore: now,
    notAfter: new Date(now.getTime() + 30 * YEAR_MS),
  })
  const authority = { certificate, key: ca.privateKey }

  it('makes a self-signed CA that Node.js reads back', () => {
    const read = new X509Certificate(certificate)
    expect(read.ca).toBe(true)
    expect(read.subject).toBe('O=podyard\nCN=test CA')
    expect(read.verify(read.publicKey)).toBe(true)
    expect(new Date(read.validFrom).toISOString()).toBe('2026-11-28T10:00:00.000Z')
    expect(new Date(read.validTo).getUTCFullYear()).toBe(2056)
  })

  it('signs a server leaf for IPv4, IPv6 and DNS names, valid under the CA', () => {
    const leaf = pair()
    // Enough names that the extension's length takes two length bytes.
    const names = Array.from({ length: 12 }, (_, i) => `node-${i}.cluster.example.internal`)
    const pem = issueLeaf(authority, {
      use: 'server',
      addresses: ['10.0.0.4', '::1', 'fd00:1:2::3', ...names],
      commonName: 'gpu-node-4',
      publicKey: leaf.publicKey,
      notBefore: now,
      notAfter: new Date(now.getTime() + 2 * YEAR_MS),
    })
    const read = new X509Certificate(pem)
    const caRead = new X509Certificate(certificate)
    expect(read.checkIssued(caRead)).toBe(true)
    expect(read.verify(caRead.publicKey)).toBe(true)
    expect(read.issuer).toBe(caRead.subject)
    expect(read.subjectAltName).toContain('IP Address:10.0.0.4, IP Address:0:0:0:0:0:0:0:1')
    expect(read.subjectAltName).toContain('IP Address:FD00:1:2:0:0:0:0:3')
    expect(read.subjectAltName).toContain('DNS:node-11.cluster.example.internal')
    expect(read.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1'])
    expect(read.checkIP('10.0.0.4')).toBe('10.0.0.4')
    expect(read.checkHost('node-3.cluster.example.internal')).toBe(
      'node-3.cluster.example.internal',
    )
  })

  it('gives each leaf a positive serial of its own', () => {
    const serials = new Set<string>()
    for (let i = 0; i < 20; i++) {
      const read = new X509Certificate(
        issueLeaf(authority, {
          use: 'client',
          commonName: 'podyard',
          publicKey: pair().publicKey,
          notBefore: now,
          notAfter: new Date(now.getTime() + YEAR_MS),
        }),
      )
      expect(read.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2'])
      serials.add(read.serialNumber)
    }
    expect(serials.size).toBe(20)
  })

  it('refuses a name that is neither an address nor a DNS name', () => {
    expect(() =>
      issueLeaf(authority, {
        use: 'server',
        addresses: ['under_score host'],
        commonName: 'x',
        publicKey: pair().publicKey,
        notBefore: now,
        notAfter: new Date(now.getTime() + YEAR_MS),
      }),
    ).toThrow(CertificateRequestError)
  })
})
