import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui'

/** podyard's mark in the docs page's top bar (in place of Swagger's). */
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="150" height="40" viewBox="0 0 150 40">
<rect x="2" y="8" width="24" height="24" rx="5" fill="#4fa3a5"/>
<rect x="8" y="14" width="12" height="12" rx="2" fill="#0d3b3c"/>
<text x="34" y="28" font-family="sans-serif" font-size="22" font-weight="700" fill="#ffffff">podyard</text>
</svg>`

/**
 * The docs page at /v2/docs (Swagger UI over /v2/openapi.json). Its content security policy is
 * @fastify/swagger-ui's without `upgrade-insecure-requests`: that directive makes the browser
 * fetch every asset of the page over https, so a server reached over plain HTTP by a host name
 * (not loopback, which browsers exempt) showed a blank page. Inline styles are allowed (scripts
 * stay `'self'` only): Swagger UI colors its code examples with style attributes.
 */
export const docsPageOptions: FastifySwaggerUiOptions = {
  routePrefix: '/v2/docs',
  staticCSP: true,
  transformStaticCSP: (header) =>
    header
      .replace(/\s*upgrade-insecure-requests;?/g, '')
      .replace("style-src 'self'", "style-src 'self' 'unsafe-inline'"),
  theme: { title: 'podyard API docs' },
  logo: { type: 'image/svg+xml', content: Buffer.from(LOGO), href: '/v2/docs', target: '_self' },
  uiConfig: { deepLinking: true, displayOperationId: true },
  validatorUrl: false,
  // "Try it out" calls the server that serves the page, wherever that is.
  transformSpecification: (document) => ({
    ...document,
    servers: [
      { url: '/', description: 'this podyard server' },
      ...((document.servers as unknown[] | undefined) ?? []),
    ],
  }),
}
