import type { FastifyInstance } from 'fastify'
import { jsonDeeperThan } from '../../shared/json-depth.js'
import { tooDeepError } from './json-nesting.js'

/**
 * `application/json` bodies of the REST API and GraphQL (the job API and the worker routes read
 * theirs as text and check them in `jsonBody`):
 * - an empty body (or one of only whitespace) is no body. RunPod's clients send
 *   `Content-Type: application/json` on every request, body or not (runpodctl's DELETE and
 *   body-less POSTs): Fastify's own parser answers those with 400 "Body cannot be empty". A
 *   route whose body is required then fails its schema (422), like any missing body;
 * - JSON nested deeper than MAX_JSON_DEPTH is refused (400) by a scan of the text, before a
 *   recursive parse or serializer could overflow the stack;
 * - anything else goes to Fastify's parser, with its prototype-poisoning checks.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8')
    if (text.trim() === '') return done(null, undefined)
    if (jsonDeeperThan(text)) return done(tooDeepError(), undefined)
    parse(request, text, done)
  })
}
