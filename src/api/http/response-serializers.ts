import fastJsonStringify from 'fast-json-stringify'
import type { FastifySerializerCompiler } from 'fastify/types/schema.js'

type Serialize = (data: unknown) => string

/**
 * Each distinct response schema's serializer, compiled once per process. fastify's own compiler
 * builds every route's serializers anew for each app it makes: about 300 ms of CPU, a third of a
 * platform's start, spent again by every platform a process starts (the test suite's workers
 * start hundreds; a CLI command that serves, one). Keyed by the schema's JSON, so that equal
 * schemas share one serializer whether or not they are one object (the same error answer is on
 * many routes); fast-json-stringify is given the schema alone, as fastify's default compiler
 * does without shared schemas (podyard adds none).
 */
const compiled = new Map<string, Serialize>()

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => {
  const key = JSON.stringify(schema)
  let serialize = compiled.get(key)
  if (serialize === undefined) {
    serialize = fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]) as Serialize
    compiled.set(key, serialize)
  }
  return serialize
}
