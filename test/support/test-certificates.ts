import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'

/**
 * A CA, an engine's server certificate for 127.0.0.1 and two client certificates (podyard's
 * and another), made with openssl in `dir`: for TLS servers that stand in for a Docker engine.
 */
export function makeCertificates(dir: string) {
  const file = (name: string) => path.join(dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl(
    'req',
    '-x509',
    ...ec,
    '-days',
    '1',
    '-subj',
    '/CN=sealed-test-ca',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
  )
  const signed = (name: string, ext: string) => {
    openssl(
      'req',
      ...ec,
      '-subj',
      `/CN=${name}`,
      '-keyout',
      file(`${name}.key`),
      '-out',
      file(`${name}.csr`),
    )
    writeFileSync(file(`${name}.ext`), ext)
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      file(`${name}.ext`),
      '-out',
      file(`${name}.pem`),
    )
  }
  signed('engine', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
  signed('podyard', 'extendedKeyUsage=clientAuth\n')
  signed('other', 'extendedKeyUsage=clientAuth\n')
  const read = (name: string) => readFileSync(file(name), 'utf8')
  return {
    files: { ca: file('ca.pem'), cert: file('podyard.pem'), key: file('podyard.key') },
    ca: read('ca.pem'),
    engine: { cert: read('engine.pem'), key: read('engine.key') },
    client: { cert: read('podyard.pem'), key: read('podyard.key') },
    other: { cert: read('other.pem'), key: read('other.key') },
  }
}
