import { routeOf, type RawApi } from './raw-api'
import type { Answer, Described } from './types'

/** A public model (docs/public-endpoints.md, "Catalog"); typed by hand until the document does. */
interface DocumentedModel {
  id: string
  kind: 'image' | 'video' | 'audio' | 'text'
  name: string
  description: string
  price: { unit: string; usd: number }
  reference: boolean
  input: { required?: string[]; properties?: Record<string, { default?: unknown }> }
}

export type PublicModel = Described<Answer<'/v2/catalog/models', 'get'>, DocumentedModel[]>[number]

export const modelsApi = {
  list: (raw: RawApi) => raw.json<PublicModel[]>(routeOf('/v2/catalog/models')),
}
