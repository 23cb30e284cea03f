/**
 * The egress policy (docs/security.md "Egress policy"): whether the platform may send a request
 * on a user's behalf to a URL, and to which of the addresses its host name resolves. Pure: the
 * addresses of this server and the resolution of names are given to it (EgressGuard does the
 * resolving; src/shared/pinned-request.ts connects to the address that was checked).
 */
import { deniedAddress, embeddedIpv4, type AddressRule } from './address-rules.js'
import {
  formatIp,
  inBlock,
  parseCidr,
  parseIp,
  sameAddress,
  type CidrBlock,
  type IpAddress,
} from './ip-address.js'

/** Why a destination is refused: an address rule, or one of the policy's own. */
export type EgressRule =
  AddressRule | 'scheme' | 'loopback-name' | 'this-server' | 'own-listener' | 'no-address'

export interface EgressRefusal {
  rule: EgressRule
  /**
   * What the destination is, to follow "<host> is ": "a private address (RFC 1918)". Names the
   * IPv4 address inside an IPv6 form, so it is shown only for addresses the user wrote.
   */
  reason: string
  /** Whether the operator's allow-list could let it through (this server's listener: never). */
  allowable: boolean
}

/** The operator's internal receivers: address blocks, exact host names, `*.` name suffixes. */
export interface EgressAllowList {
  blocks: readonly CidrBlock[]
  names: readonly string[]
  /** `*.svc.internal` is kept as `.svc.internal`: any name below it, not the name itself. */
  suffixes: readonly string[]
}

/** This server as a destination: never sent to on a user's behalf. */
export interface ServerSelf {
  /** The host's interface addresses and its configured public address. */
  addresses: readonly IpAddress[]
  /** Where the API listens; `any` (0.0.0.0, ::) is every address of the host and loopback. */
  listeners: ReadonlyArray<{ address: IpAddress | 'any'; port: number }>
}

/** A URL the platform may be asked to send to, split into what the rules look at. */
export interface EgressTarget {
  url: URL
  /** The host without brackets or a trailing dot, in lower case. */
  host: string
  port: number
  /** Set when the host is an IP address (after the URL parser's normalisation). */
  ip?: IpAddress
}

const HOST_NAME =
  /^(\*\.)?[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/i

/**
 * Reads the allow-list setting. An entry is an address, a CIDR block, a host name, or `*.` and
 * a domain; anything else is a problem (the server refuses to start rather than guess).
 */
export function parseAllowList(entries: readonly string[]): {
  allow: EgressAllowList
  problems: string[]
} {
  const blocks: CidrBlock[] = []
  const names: string[] = []
  const suffixes: string[] = []
  const problems: string[] = []
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase().replace(/\.$/, '')
    const block = parseCidr(entry)
    if (block) {
      blocks.push(block)
      continue
    }
    // The URL parser reads a host whose last label is a number as an IPv4 address.
    const lastLabel = entry.split('.').at(-1) ?? ''
    if (HOST_NAME.test(entry) && !/^(0x[0-9a-f]*|\d+)$/.test(lastLabel)) {
      if (entry.startsWith('*.')) suffixes.push(entry.slice(1))
      else names.push(entry)
      continue
    }
    problems.push(
      `${JSON.stringify(raw)} is not an IP address, a CIDR block (10.0.0.0/8, fd00::/8), a host name or *.domain`,
    )
  }
  return { allow: { blocks, names, suffixes }, problems }
}

/** Parsed self addresses; entries that are not addresses are ignored. */
export function serverSelf(
  addresses: readonly string[],
  listeners: ReadonlyArray<{ address: string; port: number }>,
): ServerSelf {
  const parsed = addresses.map(parseIp).filter((ip): ip is IpAddress => ip !== undefined)
  return {
    addresses: parsed,
    listeners: listeners.flatMap(({ address, port }) => {
      const ip = parseIp(address)
      if (ip === undefined) return []
      return [{ address: ip.value === 0n ? ('any' as const) : ip, port }]
    }),
  }
}

/** Parses a URL for sending: http or https only. */
export function parseTarget(raw: string): { target: EgressTarget } | { refusal: EgressRefusal } {
  const url = URL.canParse(raw) ? new URL(raw) : undefined
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return {
      refusal: {
        rule: 'scheme',
        reason: `must be an http or https URL (got ${url ? url.protocol : 'an unparsable URL'})`,
        allowable: false,
      },
    }
  }
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase()
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
  const ip = parseIp(host)
  return { target: { url, host, port, ...(ip ? { ip } : {}) } }
}

/** The address and, for the IPv6 forms that carry one, the IPv4 address it reaches. */
function reachable(ip: IpAddress): IpAddress[] {
  const embedded = embeddedIpv4(ip)
  return embedded ? [ip, embedded.ipv4] : [ip]
}

const isLoopback = (ip: IpAddress) => (ip.family === 4 ? ip.value >> 24n === 127n : ip.value === 1n)

export class EgressPolicy {
  constructor(
    private readonly options: {
      allow: EgressAllowList
      /** Read at every check: interfaces may come and go, the port is known after listen. */
      self: () => ServerSelf
    },
  ) {}

  /** Whether the operator allowed this host name (its addresses are then not judged by class). */
  nameAllowed(host: string): boolean {
    const { names, suffixes } = this.options.allow
    return names.includes(host) || suffixes.some((suffix) => host.endsWith(suffix))
  }

  /**
   * A refusal decided by the name alone: `localhost` and names under it are loopback whatever
   * a resolver answers (RFC 6761), unless the operator allowed them by name.
   */
  checkName(host: string): EgressRefusal | undefined {
    if (this.nameAllowed(host)) return undefined
    if (host === 'localhost' || host.endsWith('.localhost')) {
      return { rule: 'loopback-name', reason: 'a loopback name (RFC 6761)', allowable: true }
    }
    return undefined
  }

  /**
   * Whether the platform may connect to `ip` on `port`, for a URL whose host is `host` (the
   * address itself, or the name it was resolved from). This server's listener is refused
   * always; the operator's allow-list comes before the other rules.
   */
  checkAddress(ip: IpAddress, port: number, host: string): EgressRefusal | undefined {
    const self = this.options.self()
    const targets = reachable(ip)
    const listener = self.listeners.find(
      (l) =>
        l.port === port &&
        targets.some((t) =>
          l.address === 'any'
            ? isLoopback(t) || self.addresses.some((own) => sameAddress(own, t))
            : sameAddress(l.address, t),
        ),
    )
    if (listener) {
      return {
        rule: 'own-listener',
        reason: `this server's own listener (port ${port}); the platform never sends requests to itself`,
        allowable: false,
      }
    }
    if (this.nameAllowed(host)) return undefined
    if (targets.some((t) => this.options.allow.blocks.some((block) => inBlock(t, block)))) {
      return undefined
    }
    const denied = deniedAddress(ip)
    if (denied) return { ...denied, allowable: true }
    if (targets.some((t) => self.addresses.some((own) => sameAddress(own, t)))) {
      return {
        rule: 'this-server',
        reason: 'an address of this server (a host interface or its public IP)',
        allowable: true,
      }
    }
    return undefined
  }
}

/**
 * The refusal as a user reads it: the address they wrote and what it is, or for a name only the
 * class of what it resolved to, and the setting that could allow it.
 */
export function describeRefusal(
  target: Pick<EgressTarget, 'host' | 'ip'>,
  refusal: EgressRefusal,
  settingName: string,
): string {
  if (refusal.rule === 'scheme') return refusal.reason
  const said = target.ip
    ? `${formatIp(target.ip)} is ${refusal.reason}`
    : refusal.rule === 'loopback-name'
      ? `${target.host} is ${refusal.reason}`
      : `${target.host} resolves to ${RULE_SUMMARY[refusal.rule]}`
  return refusal.allowable
    ? `${said}; the platform does not send requests to internal addresses on a user's behalf unless the operator allows them (${settingName})`
    : said
}

/**
 * The class of a refused address without the address: what a name resolved to stays unsaid,
 * so that the answers of the operator's internal DNS are not shown to users.
 */
const RULE_SUMMARY: Record<EgressRule, string> = {
  'this-network': 'a "this network" address (0.0.0.0/8)',
  unspecified: 'the unspecified address',
  loopback: 'a loopback address',
  private: 'a private address (RFC 1918)',
  'carrier-grade-nat': 'a carrier-grade NAT address (RFC 6598)',
  'link-local': 'a link-local address',
  'ietf-protocol-assignments': 'an IETF protocol assignment (192.0.0.0/24)',
  documentation: 'a documentation address',
  benchmarking: 'a benchmarking address',
  'deprecated-relay': 'a deprecated 6to4 relay address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
  'unique-local': 'a unique-local address (fc00::/7)',
  'site-local': 'a deprecated site-local address',
  teredo: 'a Teredo tunnel address',
  'nat64-local-use': 'a local-use NAT64 address',
  'not-global-unicast': 'an IPv6 address outside global unicast (2000::/3)',
  scheme: 'a URL that is not http or https',
  'loopback-name': 'a loopback name',
  'this-server': 'an address of this server',
  'own-listener': "this server's own listener; the platform never sends requests to itself",
  'no-address': 'no usable address',
}

export interface Listener {
  address: string
  port: number
}

/**
 * ServerSelf for EgressPolicy, parsed again only when a source returns a different array:
 * `interfaces` (re-read now and then), `fixed` addresses (the configured public IP), and the
 * `listeners` (known once the server listens).
 */
export function selfReader(sources: {
  interfaces: () => readonly string[]
  fixed: readonly string[]
  listeners: () => readonly Listener[]
}): () => ServerSelf {
  let last: { interfaces: readonly string[]; listeners: readonly Listener[]; self: ServerSelf }
  return () => {
    const interfaces = sources.interfaces()
    const listeners = sources.listeners()
    if (last?.interfaces !== interfaces || last.listeners !== listeners) {
      last = {
        interfaces,
        listeners,
        self: serverSelf([...interfaces, ...sources.fixed], listeners),
      }
    }
    return last.self
  }
}
