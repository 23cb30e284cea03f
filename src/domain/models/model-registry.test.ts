import { describe, expect, it } from 'vitest'
import {
  buildModelRegistry,
  DEFAULT_MODELS,
  modelImageCommands,
  ModelConfigError,
} from './model-registry.js'

describe('the model registry', () => {
  it('ships an image and a text reference model', () => {
    expect(buildModelRegistry([]).map((m) => [m.id, m.kind, m.reference])).toEqual([
      ['podyard-reference-image', 'image', true],
      ['podyard-reference-text', 'text', true],
    ])
  })

  it('overrides defaults field by field, adds models and removes disabled ones', () => {
    const models = buildModelRegistry([
      {
        origin: 'file.yaml',
        entries: {
          'podyard-reference-text': { price: { unit: '1k-tokens', usd: 0.5 } },
          'podyard-reference-image': { enabled: false },
        },
      },
      {
        origin: 'models.definitions',
        entries: {
          'black-forest-labs-flux-1-schnell': {
            kind: 'image',
            price: { unit: 'megapixel', usd: 0.0024 },
            server: { url: 'http://gpu-box:8000/v1/', model: 'flux' },
            workers: { max: 4 },
          },
        },
      },
    ])
    expect(models.map((m) => m.id)).toEqual([
      'podyard-reference-text',
      'black-forest-labs-flux-1-schnell',
    ])
    expect(models[0]!.price.usd).toBe(0.5)
    expect(models[1]).toMatchObject({
      reference: false,
      server: { url: 'http://gpu-box:8000/v1', model: 'flux', apiKey: null },
      worker: { image: DEFAULT_MODELS[0]!.worker.image, workers: { min: 0, max: 4 } },
    })
  })

  it('reports every problem with where it is', () => {
    expect(() =>
      buildModelRegistry([
        {
          origin: 'models.definitions',
          entries: {
            nohyphen: { kind: 'image' },
            'new-model': { kind: 'movie', colour: 'red' },
            'text-model': { kind: 'text', price: { unit: 'megapixel', usd: 1 } },
          },
        },
      ]),
    ).toThrow(
      new ModelConfigError(
        'invalid models: models.definitions.nohyphen: a model id is lowercase letters, digits, dots and hyphens, with at least one hyphen; ' +
          'models.definitions.new-model.colour: unknown key; ' +
          'models.definitions.new-model.kind: must be one of image, video, audio, text; ' +
          'models.definitions.new-model.price: must be {unit: megapixel | 1k-tokens | job, usd: a number from 0 to 1000}; ' +
          'models.definitions.text-model.price.unit: megapixel does not apply to text models',
      ),
    )
  })

  it('runs the reference worker from the mounted build, wherever the mount really is', () => {
    expect(Object.values(modelImageCommands('/usr/bin/node'))).toEqual([
      'exec "/usr/bin/node" "${PODYARD_MOUNT_OPT_PODYARD:-/opt/podyard}/models/reference-worker.js"',
    ])
  })
})
