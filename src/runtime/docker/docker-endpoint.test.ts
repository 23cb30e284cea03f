import { createHmac } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { dockerConnectionOf, DockerEndpointError, knownHostKeys } from './docker-endpoint.js'
import { SshEngineAgent } from './engine-agents.js'

const KEY_A = Buffer.from('key-a').toString('base64')
const KEY_B = Buffer.from('key-b').toString('base64')

function hashed(name: string): string {
  const salt = Buffer.from('0123456789abcdef0123')
  const hash = createHmac('sha1', salt).update(name).digest('base64')
  return `|1|${salt.toString('base64')}|${hash}`
}

describe('knownHostKeys', () => {
  it('finds plain and hashed names, with the port as OpenSSH writes it', () => {
    const file = [
      '# comment',
      `gpu-node-1,10.0.0.1 ssh-ed25519 ${KEY_A}`,
      `[gpu-node-2]:2222 ssh-ed25519 ${KEY_B}`,
      `${hashed('gpu-node-3')} ssh-ed25519 ${KEY_B}`,
      `@revoked gpu-node-1 ssh-ed25519 ${KEY_B}`,
    ].join('\n')
    expect(knownHostKeys(file, '10.0.0.1', 22)).toEqual([Buffer.from('key-a')])
    expect(knownHostKeys(file, 'gpu-node-2', 2222)).toEqual([Buffer.from('key-b')])
    expect(knownHostKeys(file, 'gpu-node-2', 22)).toEqual([])
    expect(knownHostKeys(file, 'gpu-node-3', 22)).toEqual([Buffer.from('key-b')])
    expect(knownHostKeys(file, 'gpu-node-4', 22)).toEqual([])
  })
})

describe('dockerConnectionOf', () => {
  it('checks the host key against known_hosts, and says which file lacks it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-endpoint-'))
    try {
      writeFileSync(path.join(dir, 'known_hosts'), `gpu-node-1 ssh-ed25519 ${KEY_A}\n`)
      writeFileSync(path.join(dir, 'id'), 'private key')
      const endpoint = {
        url: 'ssh://podyard@gpu-node-1',
        sshKey: path.join(dir, 'id'),
        knownHosts: path.join(dir, 'known_hosts'),
      }
      const options = dockerConnectionOf(endpoint)
      expect(options).toMatchObject({ protocol: 'http', host: 'gpu-node-1', port: 22 })
      // The SSH connections are the agent's own, so that closing the driver ends them.
      expect(options.agent).toBeInstanceOf(SshEngineAgent)
      const ssh = (options.agent as SshEngineAgent).ssh
      expect(ssh).toMatchObject({ host: 'gpu-node-1', port: 22, username: 'podyard' })
      const verify = ssh.hostVerifier as (key: Buffer) => boolean
      expect(verify(Buffer.from('key-a'))).toBe(true)
      expect(verify(Buffer.from('key-b'))).toBe(false)
      expect(() => dockerConnectionOf({ ...endpoint, url: 'ssh://podyard@other' })).toThrow(
        `${endpoint.knownHosts} has no key for other`,
      )
      expect(() => dockerConnectionOf({ ...endpoint, sshKey: path.join(dir, 'nope') })).toThrow(
        DockerEndpointError,
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('reads a unix socket path from its URL', () => {
    expect(dockerConnectionOf({ url: 'unix:///run/pyd/docker.sock' })).toEqual({
      socketPath: '/run/pyd/docker.sock',
    })
  })
})
