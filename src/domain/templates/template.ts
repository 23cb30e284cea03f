export const TEMPLATE_CATEGORIES = ['NVIDIA', 'AMD', 'CPU'] as const
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number]

/** The container configuration and defaults a template gives the pods created from it. */
export interface Template {
  id: string
  /** Owner; null for the templates the platform ships. */
  accountId: string | null
  name: string
  image: string
  args: string
  disk: number
  env: Record<string, string>
  ports: string[]
  registry: string | null
  mounts: { persistent?: { size: number; path: string } }
  serverless: boolean
  public: boolean
  category: TemplateCategory
  startSsh: boolean
  startJupyter: boolean
  allowedCudaVersions: string[]
  createdAt: string
}

export type TemplateFields = Omit<Template, 'id' | 'accountId' | 'createdAt'>

/** Create defaults (wire-compat §3.3 for category, public, serverless, startJupyter, startSsh). */
export const TEMPLATE_DEFAULTS: Omit<TemplateFields, 'name' | 'image'> = {
  args: '',
  disk: 50,
  env: {},
  ports: [],
  registry: null,
  mounts: {},
  serverless: false,
  public: false,
  category: 'NVIDIA',
  startSsh: true,
  startJupyter: true,
  allowedCudaVersions: [],
}
