import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/**
 * One log line per request, written when it is answered (`request completed`, with the
 * request's method and url beside the status and time), instead of Fastify's two (`incoming
 * request` as well). Each line is a synchronous write: the second cost about a third of a pod
 * read's server CPU at `info` (bench/README.md, "Profile notes"). `incoming request` is still
 * written at `debug`, where seeing a request that has not been answered yet (a long poll) is
 * what the level is for.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return
    request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (this.isLogDisabled(request)) return
    const fields = { req: request, res: reply, responseTime: reply.elapsedTime }
    if (error) reply.log.error({ ...fields, err: error }, 'request errored')
    else reply.log.info(fields, 'request completed')
  }
}
