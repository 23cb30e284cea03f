import type { paths } from './generated/openapi'

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete'

type JsonOf<T> = T extends { content: { 'application/json': infer Body } } ? Body : never

/** The JSON answer of a route: `Answer<'/v2/pods/{id}', 'get'>` is a Pod. */
export type Answer<
  Path extends keyof paths,
  M extends Method,
  Status extends number = 200,
> = paths[Path][M] extends { responses: infer R }
  ? Status extends keyof R
    ? JsonOf<R[Status]>
    : never
  : never

/** The JSON body a route takes. */
export type BodyOf<Path extends keyof paths, M extends Method> = paths[Path][M] extends {
  requestBody?: infer B
}
  ? JsonOf<NonNullable<B>>
  : never

/**
 * The generated type when the OpenAPI document describes it, else `Fallback`. Some routes have
 * no schema in the document yet (the job API, the models catalog); the console types them by
 * hand until they do, and is checked against the document's own types from then on.
 */
export type Described<Generated, Fallback> = [Generated] extends [never]
  ? Fallback
  : unknown extends Generated
    ? Fallback
    : Generated

export type Pod = Answer<'/v2/pods/{id}', 'get'>
export type PodStatus = Pod['status']
export type Endpoint = Answer<'/v2/serverless/{id}', 'get'>
export type Template = Answer<'/v2/templates/{id}', 'get'>
export type NetworkVolume = Answer<'/v2/network-volumes/{id}', 'get'>
export type Registry = Answer<'/v2/registries/{id}', 'get'>
export type ApiKey = Answer<'/v2/account/api-keys', 'get'>['apiKeys'][number]
export type Account = Answer<'/v2/account', 'get'>
export type GpuType = Answer<'/v2/catalog/gpus', 'get'>['gpus'][number]
export type CpuFlavor = Answer<'/v2/catalog/cpus', 'get'>['cpus'][number]
export type DataCenter = Answer<'/v2/catalog/datacenters', 'get'>['dataCenters'][number]
export type Worker = Answer<'/v2/serverless/{id}/workers', 'get'>['workers'][number]
export type CreditEntry = Answer<'/v2/account/credits', 'get'>['entries'][number]
export type CreatePodBody = BodyOf<'/v2/pods', 'post'>
export type CreateEndpointBody = BodyOf<'/v2/serverless', 'post'>
export type Host = Answer<'/v2/admin/hosts', 'get'>['hosts'][number]
export type AddHostInput = BodyOf<'/v2/admin/hosts', 'post'>
export type HostDrain = Answer<'/v2/admin/hosts/{hostId}/drain', 'post'>
