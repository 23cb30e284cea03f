import { spawnSync } from 'node:child_process'
import { BRIDGE_PREFIX } from './tenant-network.js'

/**
 * The host's firewall for podyard's bridges (every network of tenant-network.ts has a bridge
 * named BRIDGE_PREFIX...): iptables rules in two chains of podyard's own, installed by the
 * docker driver of the local engine (it needs root, or CAP_NET_ADMIN). A container reaches the
 * host at its bridge's gateway address, and with it every service of the host bound to 0.0.0.0
 * or to one of the host's addresses: those packets are the host's INPUT, not Docker's FORWARD
 * (so DOCKER-USER alone never sees them). Rules:
 *
 * - INPUT from a podyard bridge: replies to the host's own connections, and the ports the
 *   operator allows (the platform's API, which workers call), pass; everything else is dropped.
 * - DOCKER-USER (forwarded traffic) from a podyard bridge: the denied destinations (the
 *   link-local metadata range, and the operator's `containment.egress.deny`) are dropped; with
 *   an `allow` list, so is everything else but replies, other podyard bridges and the allowed
 *   destinations; the rest goes on to Docker's rules (outbound allowed, other bridges isolated).
 *   The chain is the host's: the last podyard server of the local engine to start sets it.
 *
 * Docker's own rules are left alone; only IPv4 (podyard's networks have no IPv6).
 */

export const INPUT_CHAIN = 'PODYARD-INPUT'
export const FORWARD_CHAIN = 'PODYARD-FORWARD'

/** The link-local range of cloud metadata services (169.254.169.254). */
export const METADATA_RANGE = '169.254.0.0/16'

export interface HostFirewallRules {
  /** TCP ports of the host that containers may connect to (the platform's API). */
  allowedPorts: readonly number[]
  /** Destinations (addresses or CIDRs) no container may reach, beyond the host itself. */
  deniedDestinations: readonly string[]
  /**
   * When not empty, the only destinations (addresses or CIDRs) a container's own connections
   * may reach (config `containment.egress.allow`); other podyard bridges are left to Docker's
   * isolation, and replies to connections made to a container (its published ports) pass.
   */
  allowedDestinations?: readonly string[]
}

/** The iptables-restore input (filter table, --noflush) that sets both chains' rules. */
export function firewallRestoreInput(rules: HostFirewallRules): string {
  const lines = ['*filter', `:${INPUT_CHAIN} - [0:0]`, `:${FORWARD_CHAIN} - [0:0]`]
  lines.push(`-A ${INPUT_CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`)
  for (const port of rules.allowedPorts)
    lines.push(`-A ${INPUT_CHAIN} -p tcp --dport ${port} -j RETURN`)
  lines.push(`-A ${INPUT_CHAIN} -j DROP`)
  for (const destination of new Set([METADATA_RANGE, ...rules.deniedDestinations])) {
    lines.push(`-A ${FORWARD_CHAIN} -d ${destination} -j DROP`)
  }
  const allowed = rules.allowedDestinations ?? []
  if (allowed.length > 0) {
    lines.push(
      `-A ${FORWARD_CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`,
      `-A ${FORWARD_CHAIN} -o ${BRIDGE_PREFIX}+ -j RETURN`,
    )
    for (const destination of new Set(allowed)) {
      lines.push(`-A ${FORWARD_CHAIN} -d ${destination} -j RETURN`)
    }
    lines.push(`-A ${FORWARD_CHAIN} -j DROP`)
  } else lines.push(`-A ${FORWARD_CHAIN} -j RETURN`)
  lines.push('COMMIT', '')
  return lines.join('\n')
}

/** The rules that send a podyard bridge's packets to the chains, as iptables arguments. */
export function jumpRules(): Array<{ chain: string; rule: string[] }> {
  const bridges = `${BRIDGE_PREFIX}+`
  return [
    { chain: 'INPUT', rule: ['-i', bridges, '-j', INPUT_CHAIN] },
    { chain: 'DOCKER-USER', rule: ['-i', bridges, '-j', FORWARD_CHAIN] },
  ]
}

/**
 * The ports the INPUT chain already lets through (`iptables -S` of it): another podyard server
 * of this host (a second replica, another platform) installed them, and its workers still call
 * it there.
 */
export function allowedPortsIn(listing: string): number[] {
  const pattern = new RegExp(
    `^-A ${INPUT_CHAIN} -p tcp(?: -m tcp)? --dport (\\d+) -j RETURN$`,
    'gm',
  )
  return [...listing.matchAll(pattern)].map((match) => Number(match[1]))
}

function iptables(args: string[], input?: string, command = 'iptables'): string | undefined {
  return run(command, args, input).problem
}

function run(
  command: string,
  args: string[],
  input?: string,
): { problem?: string; stdout: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', input, timeout: 10_000 })
  if (result.error) return { problem: result.error.message, stdout: '' }
  if (result.status !== 0) {
    return { problem: (result.stderr || `exit ${result.status}`).trim(), stdout: '' }
  }
  return { stdout: result.stdout }
}

/**
 * Installs the rules (again: idempotent, each chain's rules replaced at once). Returns
 * undefined when they are in place, else why not (no iptables, not root, no DOCKER-USER chain
 * because dockerd runs without iptables).
 */
export function installHostFirewall(rules: HostFirewallRules): string | undefined {
  // Replacing the chain must not close the ports of the host's other podyard servers.
  const current = run('iptables', ['-S', INPUT_CHAIN]).stdout
  const allowedPorts = [...new Set([...allowedPortsIn(current), ...rules.allowedPorts])]
  const failed = iptables(
    ['--noflush'],
    firewallRestoreInput({ ...rules, allowedPorts }),
    'iptables-restore',
  )
  if (failed) return `iptables-restore: ${failed}`
  for (const { chain, rule } of jumpRules()) {
    // -C answers non-zero when the rule is absent; first in its chain, ahead of Docker's.
    if (iptables(['-C', chain, ...rule]) === undefined) continue
    const inserted = iptables(['-I', chain, '1', ...rule])
    if (inserted) return `iptables -I ${chain}: ${inserted}`
  }
  return undefined
}

/** Takes the rules and chains out (tests, and an operator's `podyard` uninstall steps). */
export function removeHostFirewall(): void {
  for (const { chain, rule } of jumpRules()) {
    while (iptables(['-D', chain, ...rule]) === undefined) {
      // one copy per loop
    }
  }
  for (const chain of [INPUT_CHAIN, FORWARD_CHAIN]) {
    iptables(['-F', chain])
    iptables(['-X', chain])
  }
}
