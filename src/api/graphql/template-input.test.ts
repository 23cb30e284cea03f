import { describe, expect, it } from 'vitest'
import type { Template } from '../../domain/templates/template.js'
import { templateSave } from './template-input.js'

const current: Template = {
  id: 't1',
  accountId: 'a',
  name: 'base',
  image: 'ubuntu',
  args: '',
  disk: 10,
  env: {},
  ports: [],
  registry: null,
  mounts: { persistent: { size: 20, path: '/data' } },
  serverless: false,
  public: false,
  category: 'NVIDIA',
  startSsh: true,
  startJupyter: true,
  allowedCudaVersions: [],
  createdAt: '2026-01-01T00:00:00.000Z',
}

describe('templateSave', () => {
  it('creates with runpod-python`s "" and 0 meaning none, ignoring readme and portsConfig', () => {
    expect(
      templateSave({
        name: 'n',
        imageName: 'img',
        dockerArgs: '',
        containerDiskInGb: 10,
        volumeInGb: 0,
        ports: '8888/http, 22/tcp',
        env: [{ key: 'A', value: null }],
        containerRegistryAuthId: '',
        readme: 'ignored',
        advancedStart: true,
        portsConfig: [{ port: 8888, name: 'jupyter' }],
      }),
    ).toEqual({
      kind: 'create',
      template: {
        name: 'n',
        image: 'img',
        args: '',
        disk: 10,
        ports: ['8888/http', '22/tcp'],
        env: { A: '' },
        registry: null,
        mounts: {},
      },
    })
  })

  it('puts a new volume at /workspace unless a path is given', () => {
    const save = templateSave({ name: 'n', imageName: 'i', volumeInGb: 10 })
    expect(save.kind === 'create' && save.template.mounts).toEqual({
      persistent: { size: 10, path: '/workspace' },
    })
  })

  it('updates only what is given; a path alone moves the volume, a size alone keeps the path', () => {
    expect(templateSave({ id: 't1', volumeMountPath: '/w' }, current)).toEqual({
      kind: 'update',
      id: 't1',
      patch: { mounts: { persistent: { size: 20, path: '/w' } } },
    })
    expect(templateSave({ id: 't1', volumeInGb: 30 }, current)).toEqual({
      kind: 'update',
      id: 't1',
      patch: { mounts: { persistent: { size: 30, path: '/data' } } },
    })
    expect(templateSave({ id: 't1', volumeInGb: 0 }, current)).toMatchObject({
      patch: { mounts: {} },
    })
  })

  it('names each invalid field', () => {
    expect(() => templateSave({ id: 't1', name: '', imageName: '' }, current)).toThrow(
      'the request failed validation: input.name: must not be empty; input.imageName: must not be empty',
    )
    expect(() => templateSave({ name: 'n', imageName: 'i', volumeInGb: 9 })).toThrow(
      'input.volumeInGb: must be 0 (no volume) or >= 10',
    )
    expect(() => templateSave({ name: 'x'.repeat(192), imageName: 'i' })).toThrow(
      'input.name: must NOT have more than 191 characters',
    )
  })
})
