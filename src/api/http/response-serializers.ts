import fastJsonStringify from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify/types/schema.js'

type Serialize = (data: unknown) => string

/**
 * Each distinct response schema's serializer, kept once per process and built at its first use.
 * fastify's own compiler builds every route's serializers anew for each app it makes: about
 * 300 ms of CPU, a third of a platform's start, spent again by every platform a process starts
 * (the test suite's workers start hundreds; a CLI command that serves, one). Keyed by the
 * schema's JSON, so that equal schemas share one serializer whether or not they are one object
 * (the same error answer is on many routes); fast-json-stringify is given the schema alone, as
 * fastify's default compiler does without shared schemas (podyard adds none). Built when a route
 * first answers, not when the server starts (about 100 ms of a `podyard serve`'s start, for
 * routes most servers never answer); `buildPendingSerializers` builds the rest at once.
 */
const compiled = new Map<string, { serialize: Serialize; build: () => Serialize }>()

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => {
  const key = JSON.stringify(schema)
  let entry = compiled.get(key)
  if (entry === undefined) {
    let built: Serialize | undefined
    const build = () =>
      (built ??= fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]) as Serialize)
    entry = { serialize: (data) => (built ?? build())(data), build }
    compiled.set(key, entry)
  }
  return entry.serialize
}

/**
 * Builds every serializer not yet used (returns how many this process has); throws for a schema
 * fast-json-stringify refuses.
 */
export function buildPendingSerializers(): number {
  for (const entry of compiled.values()) entry.build()
  return compiled.size
}
