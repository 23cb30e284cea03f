import { describe, expect, it } from 'vitest'
import { allowedPortsIn, firewallRestoreInput, jumpRules } from './host-firewall.js'

describe('the host firewall of the docker driver', () => {
  it("drops a bridge's packets to the host but replies and allowed ports; forwarded metadata too", () => {
    expect(firewallRestoreInput({ allowedPorts: [8080], deniedDestinations: ['10.0.0.5'] })).toBe(
      [
        '*filter',
        ':PODYARD-INPUT - [0:0]',
        ':PODYARD-FORWARD - [0:0]',
        '-A PODYARD-INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN',
        '-A PODYARD-INPUT -p tcp --dport 8080 -j RETURN',
        '-A PODYARD-INPUT -j DROP',
        '-A PODYARD-FORWARD -d 169.254.0.0/16 -j DROP',
        '-A PODYARD-FORWARD -d 10.0.0.5 -j DROP',
        '-A PODYARD-FORWARD -j RETURN',
        'COMMIT',
        '',
      ].join('\n'),
    )
    expect(jumpRules()).toEqual([
      { chain: 'INPUT', rule: ['-i', 'pydk+', '-j', 'PODYARD-INPUT'] },
      { chain: 'DOCKER-USER', rule: ['-i', 'pydk+', '-j', 'PODYARD-FORWARD'] },
    ])
  })

  it('with an allow list, forwards only replies, to podyard bridges and to the allowed destinations', () => {
    const input = firewallRestoreInput({
      allowedPorts: [],
      deniedDestinations: ['10.1.2.0/24'],
      allowedDestinations: ['10.1.0.0/16', '192.0.2.7/32'],
    })
    expect(input.split('\n').filter((l) => l.startsWith('-A PODYARD-FORWARD'))).toEqual([
      '-A PODYARD-FORWARD -d 169.254.0.0/16 -j DROP',
      '-A PODYARD-FORWARD -d 10.1.2.0/24 -j DROP',
      '-A PODYARD-FORWARD -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN',
      '-A PODYARD-FORWARD -o pydk+ -j RETURN',
      '-A PODYARD-FORWARD -d 10.1.0.0/16 -j RETURN',
      '-A PODYARD-FORWARD -d 192.0.2.7/32 -j RETURN',
      '-A PODYARD-FORWARD -j DROP',
    ])
  })

  it("keeps the ports other podyard servers of the host let through (iptables -S's listing)", () => {
    const listing = [
      '-N PODYARD-INPUT',
      '-A PODYARD-INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN',
      '-A PODYARD-INPUT -p tcp -m tcp --dport 8080 -j RETURN',
      '-A PODYARD-INPUT -p tcp -m tcp --dport 9090 -j RETURN',
      '-A PODYARD-INPUT -j DROP',
      '',
    ].join('\n')
    expect(allowedPortsIn(listing)).toEqual([8080, 9090])
    expect(allowedPortsIn('')).toEqual([])
  })
})
