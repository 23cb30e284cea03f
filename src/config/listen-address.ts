/** A `host:port` to listen on, as config `metrics.listen` gives it. */
export interface ListenAddress {
  host: string
  port: number
}

/**
 * `127.0.0.1:9464`, `metrics.internal:9464` or `[::1]:9464` (an IPv6 address in brackets, as
 * in URLs); undefined for anything else. A bare port is refused: the address is the point
 * (a private one, not every interface by accident).
 */
export function parseListenAddress(text: string): ListenAddress | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(text)
  if (!match) return undefined
  const port = Number(match[3])
  if (port > 65535) return undefined
  return { host: (match[1] ?? match[2])!, port }
}
