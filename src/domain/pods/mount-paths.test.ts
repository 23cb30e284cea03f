import { describe, expect, it } from 'vitest'
import { MAX_MOUNT_PATH_LENGTH, mountPathProblem, mountPathProblems } from './mount-paths.js'

describe('mountPathProblem', () => {
  it('accepts absolute, normalized paths outside the reserved directories', () => {
    for (const path of [
      '/workspace',
      '/runpod-volume',
      '/data/models',
      '/procfs',
      '/device',
      '/a.b/..c',
    ]) {
      expect(mountPathProblem(path), path).toBeUndefined()
    }
    expect(mountPathProblem(`/${'a'.repeat(MAX_MOUNT_PATH_LENGTH - 1)}`)).toBeUndefined()
  })

  it('refuses each kind of bad path with its reason', () => {
    const cases: Array<[string, string]> = [
      ['workspace', 'must be an absolute path (start with /)'],
      ['', 'must be an absolute path (start with /)'],
      ['/', 'must not be / (the root of the container)'],
      ['//', 'must be a normalized path: no empty segment (// or a trailing /)'],
      ['/data//x', 'must be a normalized path: no empty segment (// or a trailing /)'],
      ['/workspace/', 'must be a normalized path: no empty segment (// or a trailing /)'],
      ['/../..', 'must be a normalized path: no . or .. segment'],
      ['/data/./x', 'must be a normalized path: no . or .. segment'],
      ['/proc', 'must not be /proc or a path under it'],
      ['/proc/self', 'must not be /proc or a path under it'],
      ['/sys/fs', 'must not be /sys or a path under it'],
      ['/dev', 'must not be /dev or a path under it'],
      ['/data\u0000x', 'must not contain control characters'],
      ['/data\nx', 'must not contain control characters'],
      [`/${'a'.repeat(MAX_MOUNT_PATH_LENGTH)}`, 'must be at most 4095 characters'],
    ]
    for (const [path, problem] of cases) expect(mountPathProblem(path), path).toBe(problem)
  })

  it('names the field of each bad path of a mounts object', () => {
    expect(
      mountPathProblems(
        { persistent: { size: 10, path: '/' }, network: [{ volumeId: 'v', path: '/dev/x' }] },
        'body.mounts',
      ),
    ).toEqual([
      'body.mounts.persistent.path: must not be / (the root of the container)',
      'body.mounts.network[0].path: must not be /dev or a path under it',
    ])
  })
})
