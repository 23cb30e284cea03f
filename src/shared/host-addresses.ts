import { lookup } from 'node:dns/promises'
import { networkInterfaces } from 'node:os'

/** The system's resolver (getaddrinfo: /etc/hosts, then DNS): every A and AAAA address. */
export async function resolveWithSystem(hostname: string): Promise<string[]> {
  const found = await lookup(hostname, { all: true, verbatim: true })
  return found.map((entry) => entry.address)
}

/**
 * The addresses of this host's network interfaces, read again at most every `maxAgeMs`
 * (interfaces come and go; reading them on every request would cost a system call each).
 * Returns the same array until it is read again.
 */
export function interfaceAddresses(maxAgeMs = 10_000): () => readonly string[] {
  let addresses: readonly string[] = []
  let readAt = -Infinity
  return () => {
    const now = performance.now()
    if (now - readAt >= maxAgeMs) {
      readAt = now
      addresses = Object.values(networkInterfaces()).flatMap((list) =>
        (list ?? []).map((entry) => entry.address),
      )
    }
    return addresses
  }
}
