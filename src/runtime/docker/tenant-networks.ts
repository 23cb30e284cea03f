import type Docker from 'dockerode'
import { SERVER_LABEL } from './container-spec.js'
import { ignoring } from './engine-calls.js'
import { installHostFirewall, type HostFirewallRules } from './host-firewall.js'
import { NetworkUse } from './network-use.js'
import { networkCreateBody, networkIsCurrent, type TenantNetwork } from './tenant-network.js'

/**
 * The tenants' bridge networks on one engine: made on first use, removed with their last
 * container, and the host firewall that keeps their containers from the host's services.
 */
export class TenantNetworks {
  /** Why the host firewall is not in place (undefined: it is, or not tried yet). */
  private firewallProblem: string | undefined
  private firewallTried = false
  /**
   * Networks being made: two starts on one network at once would each create it (the engine's
   * CheckDuplicate is not atomic), leaving two of one name that no later start can join.
   */
  private readonly networksMade = new Map<string, Promise<void>>()
  private readonly networkUse = new NetworkUse()

  constructor(
    private readonly docker: Docker,
    private readonly serverId: string,
    private readonly hostFirewall: HostFirewallRules | undefined,
  ) {}

  /** Runs a start on `network` (NetworkUse.whileStarting). */
  whileStarting<T>(network: string, start: () => Promise<T>): Promise<T> {
    return this.networkUse.whileStarting(network, start)
  }

  /**
   * A tenant's bridge network, created on first use. One made by an earlier version (a bridge
   * the host firewall does not cover) is made again when no container uses it.
   */
  async ensureNetwork(network: TenantNetwork): Promise<void> {
    let made = this.networksMade.get(network.docker)
    if (!made) {
      made = this.makeNetwork(network).finally(() => this.networksMade.delete(network.docker))
      this.networksMade.set(network.docker, made)
    }
    await made
  }

  private async makeNetwork(network: TenantNetwork): Promise<void> {
    const existing = this.docker.getNetwork(network.docker)
    const info = (await ignoring([404], () => existing.inspect())) as
      { Options?: Record<string, string>; Containers?: Record<string, unknown> } | undefined
    if (info) {
      if (networkIsCurrent(network, info.Options)) return
      if (Object.keys(info.Containers ?? {}).length > 0) return
      await ignoring([403, 404, 409], () => existing.remove())
    }
    // 409: another start created it meanwhile.
    await ignoring([409], () =>
      this.docker.createNetwork(networkCreateBody(network, { [SERVER_LABEL]: this.serverId })),
    )
  }

  /** A network of ours that no container uses any more goes; one still in use stays (403/409). */
  async removeNetworkIfUnused(name: string, ids: ReadonlySet<string>): Promise<void> {
    const network = this.docker.getNetwork(name)
    const info = (await ignoring([404], () => network.inspect())) as
      { Labels?: Record<string, string>; Containers?: Record<string, unknown> } | undefined
    if (!info || !ids.has(info.Labels?.[SERVER_LABEL] ?? '')) return
    if (Object.keys(info.Containers ?? {}).length > 0) return
    await this.networkUse.removeUnlessStarting(name, async () => {
      await ignoring([403, 404, 409], () => network.remove())
    })
  }

  /** What keeps a tenant's containers from the host's services and the metadata range. */
  networkIsolation(): string {
    if (!this.hostFirewall) {
      return (
        'a bridge per tenant; the host firewall is not podyard-managed on this engine ' +
        '(remote: install it as docs/security.md says)'
      )
    }
    this.ensureFirewall()
    if (this.firewallProblem) {
      return `a bridge per tenant; host firewall NOT in place (${this.firewallProblem})`
    }
    return 'a bridge per tenant; host firewall in place (no host services, no metadata range)'
  }

  /**
   * Installs the host firewall once per driver (it is idempotent: every server start installs
   * it again); a failure is kept and reported by isolation().
   */
  ensureFirewall(): void {
    if (!this.hostFirewall || this.firewallTried) return
    this.firewallTried = true
    this.firewallProblem = installHostFirewall(this.hostFirewall)
  }
}
