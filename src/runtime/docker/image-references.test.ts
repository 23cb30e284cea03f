import { describe, expect, it } from 'vitest'
import {
  pullFailureMessage,
  pullProgressLine,
  registryAuthHeader,
  registryOf,
  withDefaultTag,
} from './image-references.js'

describe('registry auth', () => {
  it('names the registry host of the image, or Docker Hub', () => {
    expect(registryOf('ghcr.io/org/app:1')).toBe('ghcr.io')
    expect(registryOf('localhost:5000/app')).toBe('localhost:5000')
    expect(registryOf('localhost/app')).toBe('localhost')
    expect(registryOf('runpod/pytorch:2.4')).toBe('https://index.docker.io/v1/')
    expect(registryOf('ubuntu')).toBe('https://index.docker.io/v1/')
  })

  it('encodes the auth config as base64url JSON for X-Registry-Auth', () => {
    const header = registryAuthHeader('ghcr.io/org/app:1', { username: 'me', password: 'p?>/+' })
    expect(header).not.toMatch(/[+/]/)
    // Padded whatever the length: the engine reads an unpadded header as no credentials.
    for (const password of ['a', 'ab', 'abc']) {
      const padded = registryAuthHeader('ghcr.io/org/app:1', { username: 'me', password })
      expect(padded.length % 4).toBe(0)
    }
    expect(JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))).toEqual({
      username: 'me',
      password: 'p?>/+',
      serveraddress: 'ghcr.io',
    })
  })

  it('pulls the latest tag of an untagged reference', () => {
    expect(withDefaultTag('ubuntu')).toBe('ubuntu:latest')
    expect(withDefaultTag('localhost:5000/app')).toBe('localhost:5000/app:latest')
    expect(withDefaultTag('runpod/base:1')).toBe('runpod/base:1')
    expect(withDefaultTag('app@sha256:abc')).toBe('app@sha256:abc')
  })
})

describe('pull progress and failures', () => {
  it('keeps layer milestones and drops byte-level progress', () => {
    expect(pullProgressLine({ status: 'Pulling from library/busybox', id: '1' })).toBe(
      '1: Pulling from library/busybox',
    )
    expect(pullProgressLine({ status: 'Pull complete', id: 'abc123' })).toBe(
      'abc123: Pull complete',
    )
    expect(pullProgressLine({ status: 'Digest: sha256:00' })).toBe('Digest: sha256:00')
    for (const status of ['Downloading', 'Extracting', 'Waiting', 'Verifying Checksum']) {
      expect(
        pullProgressLine({ status, id: 'abc123', progress: '[==>  ] 1MB/9MB' }),
      ).toBeUndefined()
    }
    expect(pullProgressLine({})).toBeUndefined()
  })

  it('says what a failure means, with the engine words, and masks the password', () => {
    const auth = { username: 'u', password: 'hunter2-secret' }
    expect(
      pullFailureMessage(
        'reg.example.com/a/b:1',
        new Error(
          '(HTTP code 500) server error - Head "https://reg.example.com/v2/a/b/manifests/1": unauthorized: authentication required',
        ),
        auth,
      ),
    ).toBe(
      "could not pull image reg.example.com/a/b:1: the registry refused the pod's registry credentials " +
        '(Head "https://reg.example.com/v2/a/b/manifests/1": unauthorized: authentication required)',
    )
    expect(
      pullFailureMessage('a/b:1', new Error('unauthorized: bad hunter2-secret'), auth),
    ).not.toContain('hunter2-secret')
    expect(pullFailureMessage('a/b:1', new Error('unauthorized: authentication required'))).toMatch(
      /: the registry wants credentials \(set the pod's container registry auth\)/,
    )
    expect(
      pullFailureMessage(
        'a/b:9',
        new Error('(HTTP code 404) unexpected - manifest for a/b:9 not found: manifest unknown'),
      ),
    ).toBe(
      'could not pull image a/b:9: no such image in its registry (manifest for a/b:9 not found: manifest unknown)',
    )
    expect(pullFailureMessage('a/b:1', new Error('dial tcp: lookup x: no such host'))).toBe(
      'could not pull image a/b:1: the pull failed (dial tcp: lookup x: no such host)',
    )
  })
})
