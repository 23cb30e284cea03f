import { Type, type TSchema } from '@sinclair/typebox'

/** A schema as the OpenAPI document shows it, for routes whose handlers parse the wire. */
export interface DocumentedSchemas {
  params?: TSchema
  body?: TSchema
  querystring?: TSchema
  /** A schema per status, or @fastify/swagger's `{description, content}` for several types. */
  response?: Record<number, TSchema | { description: string; content?: Record<string, unknown> }>
}

declare module 'fastify' {
  interface FastifySchema {
    /**
     * Schemas the OpenAPI document shows for a route whose handler reads the wire itself (the
     * job API and the worker protocol take bodies as text): documentation only, Fastify neither
     * validates nor serializes with them.
     */
    documented?: DocumentedSchemas
  }
}

/** The answer of the log routes: server-sent events, one log line each. */
export const LogEvents = {
  description:
    'server-sent events: `id: <ts>/<seq>`, `data: {"ts","source","line"}`; a keep-alive comment every 15 s while following',
  content: { 'text/event-stream': { schema: Type.String() } },
}
