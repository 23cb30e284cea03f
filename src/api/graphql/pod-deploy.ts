import type { CatalogService } from '../../domain/catalog/catalog-service.js'
import type { Pod, PodRequirements } from '../../domain/pods/pod.js'
import type { PodService } from '../../domain/pods/pod-service.js'
import { AppError, isAppError } from '../../shared/app-error.js'
import type { TraceOrigin } from '../../shared/tracing.js'
import type { DeployRequest, HostConstraints } from './pod-input.js'

/** GraphQL's host constraints as the domain's pod requirements (absent when they ask nothing). */
function requirementsOf(c: HostConstraints): PodRequirements | undefined {
  const requirements: PodRequirements = {
    ...(c.minVcpuCount > 0 ? { minVcpus: c.minVcpuCount } : {}),
    ...(c.minMemoryInGb > 0 ? { minMemoryGb: c.minMemoryInGb } : {}),
    ...(c.cudaVersions.length > 0 ? { cudaVersions: c.cudaVersions } : {}),
    ...(c.minCudaVersion ? { minCudaVersion: c.minCudaVersion } : {}),
    ...(c.compliance.length > 0 ? { compliance: c.compliance } : {}),
  }
  return Object.keys(requirements).length > 0 ? requirements : undefined
}

/**
 * countryCode: the data centers of that country (of those asked for, when dataCenterId is given
 * too); undefined when no country is asked for.
 */
function inCountry(catalog: CatalogService, request: DeployRequest): string[] | undefined {
  const { countryCode } = request
  if (!countryCode) return undefined
  const asked = request.pod.dataCenterIds
  const ids = catalog.fleet.dataCenters
    .filter((dc) => dc.countryCode === countryCode && (!asked || asked.includes(dc.id)))
    .map((dc) => dc.id)
  if (ids.length === 0) {
    throw new AppError(
      'NO_CAPACITY',
      `no data center${asked ? ` of ${asked.join(', ')}` : ''} is in country ${countryCode}: list them with countryCodes and dataCenters`,
    )
  }
  return ids
}

/**
 * Creates the pod in the first cloud that can place it: PodService takes one cloud per create,
 * so GraphQL's cloudType ALL is SECURE, then COMMUNITY when SECURE has no capacity. A create
 * that finds no capacity changes nothing, so trying the next cloud is safe. `trace`: the
 * request's span, which the pod's spans join, as on REST's create.
 */
export async function deployPod(
  pods: PodService,
  catalog: CatalogService,
  accountId: string,
  request: DeployRequest,
  trace?: TraceOrigin,
): Promise<Pod> {
  if (request.pod.gpu && !catalog.offersGpuType(request.pod.gpu.id)) {
    throw new AppError(
      'RULE_CONFLICT',
      `unknown GPU type "${request.pod.gpu.id}": list the GPU types with the gpuTypes query`,
    )
  }
  const requirements = requirementsOf(request.constraints)
  const dataCenterIds = inCountry(catalog, request)
  const failures: string[] = []
  for (const cloud of request.clouds) {
    try {
      return await pods.create(
        accountId,
        {
          ...request.pod,
          ...(dataCenterIds ? { dataCenterIds } : {}),
          ...(requirements ? { requirements } : {}),
          cloud,
        },
        trace ? { trace } : {},
      )
    } catch (error) {
      if (!isAppError(error) || error.code !== 'NO_CAPACITY') throw error
      failures.push(`${cloud}: ${error.detail}`)
    }
  }
  throw new AppError(
    'NO_CAPACITY',
    request.clouds.length === 1
      ? `no capacity: ${failures.join('; ')}`
      : `no capacity in any cloud: ${failures.join('; ')}`,
  )
}
