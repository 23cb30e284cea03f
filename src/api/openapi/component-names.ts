import {
  AccountSchema,
  ApiKeySchema,
  CreatedApiKeySchema,
  CreditSchema,
} from '../rest/account-schemas.js'
import { HostSchema } from '../rest/admin-host-routes.js'
import { CpuType, DataCenter, GpuType } from '../rest/catalog-schemas.js'
import { ClusterSchema, CreateClusterBody, UpdateClusterBody } from '../rest/cluster-routes.js'
import { WorkerKeySchema } from '../rest/endpoint-routes.js'
import { CreateEndpointBody, EndpointSchema, UpdateEndpointBody } from '../rest/endpoint-schemas.js'
import { CreatePodBody, PodSchema, UpdatePodBody } from '../rest/pod-schemas.js'
import { ProblemSchema } from '../rest/problem-schema.js'
import { CreateRegistryBody, RegistrySchema } from '../rest/registry-routes.js'
import { ReleaseListSchema } from '../rest/release-routes.js'
import { CreateSecretBody, SecretSchema } from '../rest/secret-routes.js'
import { CreateTemplateBody, TemplateSchema, UpdateTemplateBody } from '../rest/template-routes.js'
import {
  CreateNetworkVolumeBody,
  NetworkVolumeSchema,
  UpdateNetworkVolumeBody,
} from '../rest/volume-routes.js'
import { DeliveriesSchema } from '../rest/webhook-routes.js'
import { WorkerListSchema } from '../rest/worker-list-routes.js'

/**
 * The REST API's shared shapes by name: the OpenAPI document lists each once under
 * `components.schemas` (a generated client gets one `Pod` type, not one per operation). The
 * job API's and the worker protocol's schemas carry their names as their `title`
 * (src/api/openapi/job-api-schemas.ts).
 */
export const COMPONENT_NAMES: ReadonlyMap<object, string> = new Map<object, string>([
  [AccountSchema, 'Account'],
  [ApiKeySchema, 'ApiKey'],
  [CreatedApiKeySchema, 'CreatedApiKey'],
  [ClusterSchema, 'Cluster'],
  [CreateClusterBody, 'ClusterCreateInput'],
  [UpdateClusterBody, 'ClusterUpdateInput'],
  [CpuType, 'CpuType'],
  [CreditSchema, 'Credit'],
  [DataCenter, 'DataCenter'],
  [EndpointSchema, 'Endpoint'],
  [CreateEndpointBody, 'EndpointCreateInput'],
  [UpdateEndpointBody, 'EndpointUpdateInput'],
  [GpuType, 'GpuType'],
  [HostSchema, 'Host'],
  [NetworkVolumeSchema, 'NetworkVolume'],
  [CreateNetworkVolumeBody, 'NetworkVolumeCreateInput'],
  [UpdateNetworkVolumeBody, 'NetworkVolumeUpdateInput'],
  [PodSchema, 'Pod'],
  [CreatePodBody, 'PodCreateInput'],
  [UpdatePodBody, 'PodUpdateInput'],
  [ProblemSchema, 'Problem'],
  [RegistrySchema, 'Registry'],
  [CreateRegistryBody, 'RegistryCreateInput'],
  [ReleaseListSchema, 'ReleaseList'],
  [SecretSchema, 'Secret'],
  [CreateSecretBody, 'SecretCreateInput'],
  [TemplateSchema, 'Template'],
  [CreateTemplateBody, 'TemplateCreateInput'],
  [UpdateTemplateBody, 'TemplateUpdateInput'],
  [DeliveriesSchema, 'WebhookDeliveries'],
  [WorkerKeySchema, 'WorkerKey'],
  [WorkerListSchema, 'WorkerList'],
])

/**
 * Real requests for the docs page's body editor and generated clients, in place of the
 * `"string"` and `0` a schema alone gives. test/api/openapi-document.test.ts sends each to a server.
 */
export const COMPONENT_EXAMPLES: Readonly<Record<string, unknown>> = {
  PodCreateInput: {
    name: 'pytorch-4090',
    image: 'runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04',
    gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 },
    ports: ['8888/http', '22/tcp'],
    env: { JUPYTER_PASSWORD: 'change-me' },
    disk: 20,
  },
  EndpointCreateInput: {
    name: 'sdxl-worker',
    image: 'registry.example.com/sdxl-worker:1.0',
    gpu: { pools: ['ADA_24'], count: 1 },
    workers: { min: 0, max: 3 },
  },
  TemplateCreateInput: {
    name: 'pytorch-jupyter',
    image: 'runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04',
    ports: ['8888/http', '22/tcp'],
    env: { JUPYTER_PASSWORD: 'change-me' },
  },
  NetworkVolumeCreateInput: { name: 'datasets', size: 50, dataCenterId: 'EU-RO-1' },
}

/**
 * Rules the handlers check that a generator can read from the schema: a pod needs an image or a
 * template that gives one; an endpoint takes one of the two, not both. Only the document carries
 * them: the routes validate them with their own messages.
 */
const IMAGE_OR_TEMPLATE = [
  { required: ['image'], properties: { image: { type: 'string', minLength: 1 } } },
  { required: ['templateId'], properties: { templateId: { type: 'string', minLength: 1 } } },
]
// Under allOf, so that generators intersect it with the properties (a plain anyOf beside
// `properties` reads to openapi-typescript as "the properties, or an image, or a template").
export const COMPONENT_RULES: Readonly<Record<string, Record<string, unknown>>> = {
  PodCreateInput: { allOf: [{ anyOf: IMAGE_OR_TEMPLATE }] },
  EndpointCreateInput: {
    allOf: [
      { anyOf: IMAGE_OR_TEMPLATE },
      { not: { required: ['image', 'templateId'], properties: { image: {}, templateId: {} } } },
    ],
  },
}

/**
 * A copy of a route's schema in which each named shape carries its name as its `title` (and
 * its example), which the document turns into a reference (component-schemas.ts). The route's own schema objects
 * are left as they are: Fastify validates and serializes with them.
 */
export function withComponentTitles<T>(schema: T): T {
  const copy = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(copy)
    if (typeof value !== 'object' || value === null) return value
    const copied: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(value)) copied[key] = copy(child)
    const name = COMPONENT_NAMES.get(value)
    if (name === undefined) return copied
    const example = COMPONENT_EXAMPLES[name]
    return {
      ...copied,
      ...COMPONENT_RULES[name],
      title: name,
      ...(example === undefined ? {} : { examples: [example] }),
    }
  }
  return copy(schema) as T
}
