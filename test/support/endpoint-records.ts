import type { Endpoint } from '../../src/domain/serverless/endpoint.js'

/**
 * An endpoint as the store keeps it, for tests that write endpoints through a repository: a
 * CPU queue endpoint (cpu3c, 2 vCPUs, up to 3 workers) of `accountId`, `fields` replacing any
 * of its fields.
 */
export function endpointRecord(
  id: string,
  accountId: string,
  fields: Partial<Endpoint> = {},
): Endpoint {
  const at = '2026-02-01T10:00:00.000Z'
  return {
    id,
    accountId,
    name: id,
    type: 'QUEUE',
    templateId: null,
    image: 'worker:1',
    args: '',
    disk: 5,
    env: {},
    ports: [],
    registry: null,
    gpu: null,
    cpu: [{ id: 'cpu3c', vcpuCount: 2, memory: 4 }],
    workers: { min: 0, max: 3, idleTimeout: 5 },
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    dataCenterIds: [],
    networkVolumes: [],
    timeout: 300000,
    flashboot: 'OFF',
    version: 1,
    createdAt: at,
    updatedAt: at,
    ...fields,
  }
}
