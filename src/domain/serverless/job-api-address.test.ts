import { describe, expect, it } from 'vitest'
import { unreachableFromOtherHosts } from './job-api-address.js'

describe('unreachableFromOtherHosts', () => {
  it('refuses loopback names and addresses, and the unspecified address', () => {
    expect(unreachableFromOtherHosts('http://127.0.0.1:8080')).toBe('a loopback address')
    expect(unreachableFromOtherHosts('http://127.3.4.5')).toBe('a loopback address')
    expect(unreachableFromOtherHosts('http://[::1]:8080')).toBe('a loopback address')
    expect(unreachableFromOtherHosts('http://localhost:8080/')).toBe('a loopback name')
    expect(unreachableFromOtherHosts('http://api.LOCALHOST')).toBe('a loopback name')
    expect(unreachableFromOtherHosts('http://0.0.0.0:8080')).toBe('the unspecified address')
    expect(unreachableFromOtherHosts('http://[::]:8080')).toBe('the unspecified address')
  })

  it('accepts addresses and names another host may reach', () => {
    expect(unreachableFromOtherHosts('http://10.213.0.1:8080')).toBeNull()
    expect(unreachableFromOtherHosts('https://jobs.example.com')).toBeNull()
    expect(unreachableFromOtherHosts('http://128.0.0.1')).toBeNull()
    expect(unreachableFromOtherHosts('http://localhost.example.com')).toBeNull()
  })
})
