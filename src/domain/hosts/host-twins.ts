import { LOCAL_HOST_ID, type Host } from '../catalog/fleet.js'
import type { HostStateRecord, ProbeOutcome } from './host-state.js'

/**
 * Real hosts that are one machine listed twice: their engines answered with the same id
 * (Docker's /info `ID`), as when two hosts name one engine by two addresses, or a host names
 * this machine's engine that the local host already runs on. Both would sell the same GPUs,
 * CPUs and memory. One of them keeps the machine: the one that was UP, else the local host,
 * else the one the fleet lists first; each other one gets a reason to be DOWN, naming it.
 * Simulated hosts share this machine's engine by design and are left out.
 *
 * @param outcomes each host's probe outcome, in the order of `hosts`
 * @returns the reason of each host that is not to keep the machine, by host id
 */
export function engineTwins(
  hosts: readonly Host[],
  outcomes: readonly ProbeOutcome[],
  previous: (hostId: string) => HostStateRecord | undefined,
): Map<string, string> {
  const byEngine = new Map<string, Host[]>()
  hosts.forEach((host, i) => {
    const outcome = outcomes[i]
    const engineId = outcome?.ok ? outcome.facts?.engineId : undefined
    if (host.simulated || !engineId) return
    byEngine.set(engineId, [...(byEngine.get(engineId) ?? []), host])
  })
  const twins = new Map<string, string>()
  for (const [engineId, sharing] of byEngine) {
    if (sharing.length < 2) continue
    // Array.sort is stable: among hosts alike in both, the fleet's order decides.
    const rank = (host: Host) =>
      (previous(host.id)?.state === 'UP' ? 2 : 0) + (host.id === LOCAL_HOST_ID ? 1 : 0)
    const [keeper, ...others] = [...sharing].sort((a, b) => rank(b) - rank(a))
    for (const host of others) {
      twins.set(
        host.id,
        `its engine is host ${keeper!.id}'s (engine id ${engineId}): one machine listed twice ` +
          `would be sold twice; remove one of the two hosts, or point ${host.id} at its own machine`,
      )
    }
  }
  return twins
}
