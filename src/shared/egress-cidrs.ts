import { BlockList, isIP } from 'node:net'

/**
 * The operator's egress policy for workloads (config `containment.egress`, docs/security.md,
 * "Egress of workloads"): `deny` CIDRs are never reached; a non-empty `allow` makes outbound
 * traffic reach only its CIDRs. The metadata range and the platform's own addresses are denied
 * whatever it says.
 */
export interface EgressRules {
  allow: readonly string[]
  deny: readonly string[]
}

export const NO_EGRESS_RULES: EgressRules = { allow: [], deny: [] }

/** Denied whatever the policy: the link-local range of cloud metadata services. */
export const METADATA_CIDR = '169.254.0.0/16'

interface Cidr {
  address: string
  prefix: number
  family: 'ipv4' | 'ipv6'
}

/** `10.0.0.0/8`, `fd00::/8`, or a bare address (a /32 or /128); undefined for anything else. */
export function parseCidr(text: string): Cidr | undefined {
  const [address = '', prefixText, ...rest] = text.trim().split('/')
  if (rest.length > 0) return undefined
  const version = isIP(address)
  if (version === 0) return undefined
  const max = version === 4 ? 32 : 128
  const prefix = prefixText === undefined ? max : Number(prefixText)
  if (!/^\d{1,3}$/.test(prefixText ?? String(max)) || prefix > max) return undefined
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' }
}

/** The CIDR as `ip route` takes it (a bare address gets its full prefix). */
export function cidrText(text: string): string {
  const cidr = parseCidr(text)
  return cidr ? `${cidr.address}/${cidr.prefix}` : text
}

/** Whether `inner` lies wholly inside `outer`. */
function within(inner: Cidr, outer: Cidr): boolean {
  if (inner.family !== outer.family || inner.prefix < outer.prefix) return false
  const list = new BlockList()
  list.addSubnet(outer.address, outer.prefix, outer.family)
  return list.check(inner.address, inner.family)
}

/**
 * What is wrong with a policy, one line each (empty when nothing): every entry must be a CIDR
 * or an address, and an allowed CIDR must not lie inside a denied one (or the metadata range),
 * where it could never be reached: deny wins, as the most specific route does.
 */
export function egressRulesProblems(rules: EgressRules): string[] {
  const problems: string[] = []
  const parsed = (list: readonly string[], key: string): Cidr[] =>
    list.flatMap((text, i) => {
      const cidr = parseCidr(text)
      if (!cidr) {
        problems.push(
          `containment.egress.${key}.${i}: expected a CIDR (10.0.0.0/8, fd00::/8) or an address, got ${JSON.stringify(text)}`,
        )
        return []
      }
      return [cidr]
    })
  const deny = parsed(rules.deny, 'deny')
  parsed(rules.allow, 'allow')
  const denied = [...deny, parseCidr(METADATA_CIDR)!]
  rules.allow.forEach((text, i) => {
    const cidr = parseCidr(text)
    const inside = cidr && denied.find((d) => within(cidr, d))
    if (inside) {
      problems.push(
        `containment.egress.allow.${i}: ${text} lies inside the denied ${inside.address}/${inside.prefix}: it could never be reached`,
      )
    }
  })
  return problems
}
