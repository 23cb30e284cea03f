import type { PublicModelEntry } from '../../domain/models/model-service.js'
import type { ModelKind, PriceUnit } from '../../domain/models/model.js'

/** RunPod's `source` (modality) and `tag` of a public endpoint, per model kind. */
const KIND_LABELS: Record<ModelKind, { source: string; tag: string }> = {
  image: { source: 'image', tag: 'text-to-image' },
  video: { source: 'video', tag: 'text-to-video' },
  audio: { source: 'audio', tag: 'text-to-audio' },
  text: { source: 'language', tag: 'text-to-text' },
}

const UNIT_WORDS: Record<PriceUnit, string> = {
  megapixel: 'megapixel',
  '1k-tokens': '1k tokens',
  job: 'job',
}

/**
 * One public model as RunPod's `allAiApiPublicConfigs` item: `aiApiId` is the endpoint id of
 * `/v2/<aiApiId>/...`; `metadata` is JSON text with the price, as RunPod's carries it.
 */
export function publicConfigView(entry: PublicModelEntry) {
  const { model } = entry
  const labels = KIND_LABELS[model.kind]
  return {
    id: `cfg_${model.id}`,
    aiApiId: model.id,
    modelName: entry.modelName,
    displayName: model.name,
    description: model.description,
    metadata: JSON.stringify({
      cost: model.price.usd,
      unit: model.price.unit,
      owner: 'podyard',
      source: labels.source,
      tag: labels.tag,
      reference: model.reference,
      priceString: `$${model.price.usd} per ${UNIT_WORDS[model.price.unit]}`,
    }),
    isLive: entry.live,
    createdAt: entry.createdAt,
    updatedAt: entry.updatedAt,
  }
}
