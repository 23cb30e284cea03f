import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { MAX_ADDRESSES, type HostCertificateService } from '../../domain/hosts/host-certificates.js'
import { adminOnly } from './admin-access.js'
import { MANAGE_HOSTS } from './admin-host-routes.js'
import { ProblemSchema } from './problem-schema.js'

const PublicKeyPem = (description: string) =>
  Type.String({ minLength: 1, maxLength: 16_384, description })

const IssueBody = Type.Object(
  {
    hostId: Type.String({
      minLength: 1,
      maxLength: 200,
      description: "the host's id: the server certificate's common name",
    }),
    addresses: Type.Array(Type.String({ minLength: 1, maxLength: 253 }), {
      minItems: 1,
      maxItems: MAX_ADDRESSES,
      description: "the IP addresses and DNS names the host's engine is reached at",
    }),
    serverPublicKey: PublicKeyPem(
      "the host engine's public key, PEM (EC P-256/P-384 or RSA >= 2048); its private key stays on the operator's machine",
    ),
    clientPublicKey: PublicKeyPem("the public key podyard's client certificate is for, PEM"),
  },
  {
    additionalProperties: false,
    examples: [
      {
        hostId: 'gpu-node-4',
        addresses: ['10.0.0.14', 'gpu-node-4.internal'],
        serverPublicKey:
          '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE...\n-----END PUBLIC KEY-----\n',
        clientPublicKey:
          '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE...\n-----END PUBLIC KEY-----\n',
      },
    ],
  },
)

const CERTIFICATE_EXAMPLE = '-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n'

const IssuedCertificates = Type.Object(
  {
    ca: Type.String({ description: "the authority's certificate: the engine's --tlscacert" }),
    serverCertificate: Type.String({
      description: "the engine's --tlscert: TLS server authentication only, for the addresses",
    }),
    clientCertificate: Type.String({
      description: "podyard's client certificate for the host: TLS client authentication only",
    }),
    notAfter: Type.String({
      format: 'date-time',
      description: 'when both certificates end; re-issue before then',
    }),
  },
  {
    examples: [
      {
        ca: CERTIFICATE_EXAMPLE,
        serverCertificate: CERTIFICATE_EXAMPLE,
        clientCertificate: CERTIFICATE_EXAMPLE,
        notAfter: '2028-11-27T13:00:00Z',
      },
    ],
  },
)

const Authority = Type.Object(
  { ca: Type.String({ description: "the authority's certificate, PEM" }) },
  { examples: [{ ca: CERTIFICATE_EXAMPLE }] },
)

const errors = { 401: ProblemSchema, 403: ProblemSchema, 429: ProblemSchema }
const tags = ['Admin']

/**
 * The certificate authority podyard keeps for its hosts' engines (docs/fleet.md, "TLS issued
 * by podyard"). Admin only; an extension of ours, not part of RunPod's API.
 */
export async function adminHostCertificateRoutes(
  app: FastifyInstance,
  { certificates }: { certificates: HostCertificateService },
): Promise<void> {
  app.post<{ Body: Static<typeof IssueBody> }>(
    '/admin/host-certificates',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'issueHostCertificates',
        summary: "Sign a host engine's server certificate and podyard's client certificate for it",
        description:
          'Signs the two public keys with the authority podyard keeps (made on first use, its key sealed): a server certificate for the addresses, and a client certificate podyard presents to that engine. Send only public keys; `podyard hosts add --tls-issue` makes the key pairs where it runs.',
        body: IssueBody,
        response: { 201: IssuedCertificates, 400: ProblemSchema, 422: ProblemSchema, ...errors },
      },
    },
    async (request, reply) => {
      return reply.code(201).send(await certificates.issue(request.body))
    },
  )

  app.get(
    '/admin/host-certificates/ca',
    {
      config: adminOnly(MANAGE_HOSTS),
      schema: {
        tags,
        operationId: 'getHostCertificateAuthority',
        summary: "The certificate of the authority that signs the hosts' engine certificates",
        response: { 200: Authority, ...errors },
      },
    },
    async () => {
      return { ca: await certificates.caCertificate() }
    },
  )
}
