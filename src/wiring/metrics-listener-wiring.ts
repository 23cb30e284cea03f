import type { FastifyInstance } from 'fastify'
import { buildMetricsApp } from '../api/metrics-app.js'
import { parseListenAddress } from '../config/listen-address.js'
import type { PlatformContext } from './platform-context.js'

/** Why a listen failed, in the operator's words (Node's codes otherwise). */
const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'address in use',
  EADDRNOTAVAIL: 'no interface of this machine has that address',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  ENOTFOUND: 'the host name does not resolve',
}

/**
 * The listener of config `metrics.listen` (src/api/metrics-app.ts), listening; undefined when
 * the key is empty. Its `url` is where Prometheus scrapes it; closing `app` closes it.
 */
export async function openMetricsListener(
  context: PlatformContext,
): Promise<{ app: FastifyInstance; url: string } | undefined> {
  const { config, logger } = context
  const configured = config.metrics.listen
  if (configured === '') return undefined
  // Checked when the configuration was loaded; a test's configuration is not.
  const address = parseListenAddress(configured)
  if (!address) throw new Error(`metrics.listen: expected host:port, got ${configured}`)
  const app = buildMetricsApp({ logger, metrics: context.metrics.registry })
  try {
    const bound = await app.listen({ host: address.host, port: address.port })
    return { app, url: `${bound}/metrics` }
  } catch (error) {
    await app.close()
    const code = (error as NodeJS.ErrnoException).code ?? ''
    throw new Error(
      `metrics.listen: cannot listen on ${configured}: ${LISTEN_ERRORS[code] ?? (error as Error).message}`,
      { cause: error },
    )
  }
}
