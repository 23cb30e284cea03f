import { describe, expect, it } from 'vitest'
import { desiredStatusOf, isPublicIp } from './pod-view.js'

describe('GraphQL pod view', () => {
  it('maps statuses to desiredStatus (spec "Pod desired status")', () => {
    expect(
      (['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'] as const).map(
        desiredStatusOf,
      ),
    ).toEqual(['RUNNING', 'RUNNING', 'RUNNING', 'EXITED', 'EXITED', 'TERMINATED'])
  })

  it('calls only internet-routable addresses public', () => {
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.1.1',
      '::1',
      'fd00::1',
      null,
    ]) {
      expect(isPublicIp(ip), String(ip)).toBe(false)
    }
    for (const ip of ['8.8.8.8', '172.32.0.1', '2001:db8::1']) expect(isPublicIp(ip), ip).toBe(true)
  })
})
