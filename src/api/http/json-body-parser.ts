import type { FastifyInstance } from 'fastify'

/**
 * `application/json` bodies, where an empty body (or one of only whitespace) is no body.
 * RunPod's clients send `Content-Type: application/json` on every request, body or not
 * (runpodctl's DELETE and body-less POSTs): Fastify's own parser answers those with 400 "Body
 * cannot be empty". A route whose body is required then fails its schema (422), like any
 * missing body. Anything else goes to Fastify's parser, with its prototype-poisoning checks.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8')
    if (text.trim() === '') return done(null, undefined)
    parse(request, text, done)
  })
}
