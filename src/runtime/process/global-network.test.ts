import { describe, expect, it } from 'vitest'
import { bridgeName, chooseAddress, hostVethName, MEMBER_INTERFACE } from './global-network.js'

describe('global networks of the process driver', () => {
  it('names bridges and veths within the kernel limit, per state directory', () => {
    const names = [
      bridgeName('/var/lib/podyard/runtime/process', 'account-1'),
      bridgeName('/other', 'account-1'),
      hostVethName('/var/lib/podyard/runtime/process', 'abcdefghijklmn'),
    ]
    for (const name of [...names, MEMBER_INTERFACE]) expect(name.length).toBeLessThanOrEqual(15)
    expect(new Set(names).size).toBe(3)
  })

  it('gives a pod the address its id hashes to, or the next free one', () => {
    const first = chooseAddress('pod-1', new Set())
    expect(first).toMatch(/^10\.217\.\d+\.\d+$/)
    expect(chooseAddress('pod-1', new Set())).toBe(first)
    const second = chooseAddress('pod-1', new Set([first]))
    expect(second).not.toBe(first)
    expect(second).toMatch(/^10\.217\.\d+\.\d+$/)
    for (const address of [first, second]) {
      const [, , c, d] = address.split('.').map(Number)
      expect(c! * 256 + d!).toBeGreaterThan(0)
      expect(c! * 256 + d!).toBeLessThan(65535)
    }
  })
})
