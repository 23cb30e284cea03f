import { readFileSync } from 'node:fs'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

/**
 * RunPod's own clients, as a conformance check: every REST answer of the pod, endpoint,
 * template, network volume, registry, catalog and billing operations, called over HTTP as a
 * member account (not the admin), is validated against schemas written for this test from the
 * shapes RunPod's REST v2 document describes (test/fixtures/runpod-v2-schemas.json: the fields
 * it requires, their types and enums). A client generated from RunPod's document reads these
 * answers; a required field missing or a null where it declares a number breaks it.
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020
const SCHEMAS = JSON.parse(
  readFileSync(new URL('../fixtures/runpod-v2-schemas.json', import.meta.url), 'utf8'),
) as object

const number = { type: 'number' }
/** A billing report of RunPod's v2 document: records, and metadata with totals of the same amounts. */
function billingReport(amounts: string[], idField?: string, uniqueField?: string) {
  const amountProps = Object.fromEntries(amounts.map((a) => [a, number]))
  return {
    type: 'object',
    required: ['records', 'metadata'],
    properties: {
      records: {
        type: 'array',
        items: {
          type: 'object',
          required: ['startTime', 'endTime', ...amounts, ...(idField ? [idField] : [])],
          properties: {
            startTime: { type: 'string' },
            endTime: { type: 'string' },
            ...amountProps,
            ...(idField ? { [idField]: { type: 'string' } } : {}),
          },
        },
      },
      metadata: {
        type: 'object',
        required: ['query', 'recordCount', 'totals', ...(uniqueField ? [uniqueField] : [])],
        properties: {
          query: { $ref: 'runpod-v2#/$defs/BillingQuery' },
          recordCount: { type: 'integer' },
          ...(uniqueField ? { [uniqueField]: { type: 'integer' } } : {}),
          totals: { type: 'object', required: amounts, properties: amountProps },
        },
      },
    },
  }
}

const BILLING: Record<string, object> = {
  '/v2/billing': billingReport([
    'totalAmount',
    'podGpuAmount',
    'podCpuAmount',
    'podDiskAmount',
    'serverlessGpuAmount',
    'serverlessCpuAmount',
    'serverlessDiskAmount',
    'serverlessFeeAmount',
    'storageStandardAmount',
    'storageHighPerformanceAmount',
    'endpointAmount',
    'clusterGpuAmount',
    'clusterDiskAmount',
    'clusterNetworkingAmount',
  ]),
  '/v2/billing/pods': billingReport(
    ['totalAmount', 'gpuAmount', 'cpuAmount', 'diskAmount'],
    'podId',
    'uniquePodCount',
  ),
  '/v2/billing/serverless': billingReport(
    ['totalAmount', 'gpuAmount', 'cpuAmount', 'diskAmount', 'feeAmount'],
    'serverlessId',
    'uniqueServerlessCount',
  ),
  '/v2/billing/endpoints': billingReport(['totalAmount']),
  '/v2/billing/network-volumes': billingReport(
    ['totalAmount', 'standardAmount', 'highPerformanceAmount'],
    'networkVolumeId',
    'uniqueNetworkVolumeCount',
  ),
  '/v2/billing/clusters': billingReport(
    ['totalAmount', 'gpuAmount', 'diskAmount', 'networkingAmount'],
    'clusterId',
    'uniqueClusterCount',
  ),
}

/** RunPod's v2 operation ids, by method and path (its document's, for the operations it has). */
const RUNPOD_OPERATION_IDS: Record<string, string> = {
  'get /v2/account/ssh-keys': 'getSshKeys',
  'put /v2/account/ssh-keys': 'updateSshKeys',
  'get /v2/pods': 'listPods',
  'post /v2/pods': 'createPod',
  'get /v2/pods/{id}': 'getPod',
  'patch /v2/pods/{id}': 'updatePod',
  'delete /v2/pods/{id}': 'deletePod',
  'get /v2/pods/{id}/logs': 'getPodLogs',
  'post /v2/pods/{id}/action': 'podAction',
  'get /v2/clusters': 'listClusters',
  'post /v2/clusters': 'createCluster',
  'get /v2/clusters/{id}': 'getCluster',
  'patch /v2/clusters/{id}': 'updateCluster',
  'delete /v2/clusters/{id}': 'deleteCluster',
  'get /v2/clusters/{id}/pods': 'listClusterPods',
  'get /v2/serverless': 'listEndpoints',
  'post /v2/serverless': 'createEndpoint',
  'get /v2/serverless/{id}': 'getEndpoint',
  'patch /v2/serverless/{id}': 'updateEndpoint',
  'delete /v2/serverless/{id}': 'deleteEndpoint',
  'get /v2/serverless/{id}/workers': 'listEndpointWorkers',
  'get /v2/serverless/{id}/releases': 'listEndpointReleases',
  'get /v2/serverless/{id}/workers/{workerId}/logs': 'getWorkerLogs',
  'get /v2/templates': 'listTemplates',
  'post /v2/templates': 'createTemplate',
  'get /v2/templates/{id}': 'getTemplate',
  'patch /v2/templates/{id}': 'updateTemplate',
  'delete /v2/templates/{id}': 'deleteTemplate',
  'get /v2/network-volumes': 'listNetworkVolumes',
  'post /v2/network-volumes': 'createNetworkVolume',
  'get /v2/network-volumes/{id}': 'getNetworkVolume',
  'patch /v2/network-volumes/{id}': 'updateNetworkVolume',
  'delete /v2/network-volumes/{id}': 'deleteNetworkVolume',
  'get /v2/registries': 'listRegistries',
  'post /v2/registries': 'createRegistry',
  'get /v2/registries/{id}': 'getRegistry',
  'delete /v2/registries/{id}': 'deleteRegistry',
  'get /v2/registries/delegations': 'listDelegations',
  'post /v2/registries/delegations': 'createDelegation',
  'delete /v2/registries/delegations/{id}': 'revokeDelegation',
  'get /v2/catalog/gpus': 'listGpuTypes',
  'get /v2/catalog/gpus/{id}': 'getGpuType',
  'get /v2/catalog/cpus': 'listCpuTypes',
  'get /v2/catalog/cpus/{id}': 'getCpuType',
  'get /v2/catalog/datacenters': 'listDataCenters',
  'get /v2/catalog/datacenters/{id}': 'getDataCenter',
  'get /v2/catalog/templates': 'listPublicTemplates',
  'get /v2/billing': 'listBilling',
  'get /v2/billing/pods': 'listPodBilling',
  'get /v2/billing/serverless': 'listServerlessBilling',
  'get /v2/billing/endpoints': 'listEndpointBilling',
  'get /v2/billing/network-volumes': 'listNetworkVolumeBilling',
  'get /v2/billing/clusters': 'listClusterBilling',
}

describe("REST answers against RunPod's v2 schemas, as a member account", () => {
  let platform: TestPlatform
  let key: string
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false }))
  ajv.addSchema(SCHEMAS)

  /** Calls as the member and checks the status, the JSON content type and the schema. */
  async function answer(
    method: string,
    path: string,
    schema: string | object,
    body?: unknown,
    status = method === 'POST' ? 201 : 200,
  ): Promise<Record<string, unknown>> {
    const response = await platform.call(path, {
      key,
      method,
      ...(body === undefined ? {} : { json: body }),
    })
    const text = await response.text()
    const where = `${method} ${path}`
    expect(response.status, `${where}: ${text}`).toBe(status)
    expect(response.headers.get('content-type'), where).toMatch(/^application\/json/)
    const value = JSON.parse(text) as Record<string, unknown>
    const validate =
      typeof schema === 'string'
        ? ajv.getSchema(`runpod-v2#/$defs/${schema}`)!
        : ajv.compile(schema)
    const valid = validate(value)
    expect(
      valid ? [] : ajv.errorsText(validate.errors, { separator: '\n' }).split('\n'),
      where,
    ).toEqual([])
    return value
  }

  beforeAll(async () => {
    platform = await startTestPlatform()
    key = await otherAccountKey(platform, 'runpod-schemas@example.com')
    const account = (await (await platform.call('/v2/account', { key })).json()) as { id: string }
    const credit = await platform.call(`/v2/admin/accounts/${account.id}/credits`, {
      key: TEST_ADMIN_KEY,
      method: 'POST',
      json: { amount: 100 },
    })
    expect(credit.status).toBeLessThan(300)
  })
  afterAll(() => platform.close())

  it('pods: create, get, list, update, action, from a template, with SSH exposed', async () => {
    const template = await answer('POST', '/v2/templates', 'Template', {
      name: 'schemas-pod',
      image: 'busybox',
      env: { A: '1' },
      ports: ['22/tcp'],
    })
    const cpuPod = await answer('POST', '/v2/pods', 'Pod', {
      name: 'schemas-cpu',
      image: 'busybox',
      args: 'sleep 300',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
    })
    expect(cpuPod.ssh).toEqual({ proxy: null, direct: null })
    const gpuPod = await answer('POST', '/v2/pods', 'Pod', {
      name: 'schemas-gpu',
      templateId: template.id,
      args: 'sleep 300',
      gpu: { id: 'NVIDIA RTX A6000', count: 1 },
    })
    expect(gpuPod.template).toBe(template.id)
    await answer('GET', `/v2/pods/${String(gpuPod.id)}`, 'Pod')
    await answer('GET', '/v2/pods', 'ListPods')
    await answer('GET', '/v2/pods?status=PROVISIONING&status=STARTING&status=RUNNING', 'ListPods')
    await answer('PATCH', `/v2/pods/${String(cpuPod.id)}`, 'Pod', { name: 'schemas-renamed' })
    // Once running, the runtime block and the direct SSH endpoint are filled in.
    let running: Record<string, unknown> = {}
    await expect
      .poll(
        async () => {
          running = await answer('GET', `/v2/pods/${String(gpuPod.id)}`, 'Pod')
          return running.status
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe('RUNNING')
    expect((running.ssh as { direct: unknown }).direct).not.toBeNull()
    expect(running.cudaVersion).toMatch(/^\d+\.\d+$/)
    await answer('POST', `/v2/pods/${String(gpuPod.id)}/action`, 'Pod', { action: 'stop' }, 200)
    for (const pod of [cpuPod, gpuPod]) {
      expect(
        (await platform.call(`/v2/pods/${String(pod.id)}`, { key, method: 'DELETE' })).status,
      ).toBe(204)
    }
  }, 60_000)

  it('serverless endpoints: create (from a template with overrides), get, list, update, workers', async () => {
    const template = await answer('POST', '/v2/templates', 'Template', {
      name: 'schemas-worker',
      image: 'worker:1',
      serverless: true,
    })
    const endpoint = await answer('POST', '/v2/serverless', 'Endpoint', {
      name: 'schemas',
      templateId: template.id,
      image: 'worker:2',
      gpu: { pools: ['ADA_24'] },
    })
    expect(endpoint).toMatchObject({ templateId: template.id, image: 'worker:2' })
    const cpu = await answer('POST', '/v2/serverless', 'Endpoint', {
      name: 'schemas-cpu',
      image: 'worker:1',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'REQUEST_COUNT', requestCount: 4 },
    })
    await answer('GET', `/v2/serverless/${String(endpoint.id)}`, 'Endpoint')
    await answer('GET', '/v2/serverless', 'ListEndpoints')
    await answer('PATCH', `/v2/serverless/${String(cpu.id)}`, 'Endpoint', { name: 'renamed' })
    await answer('GET', `/v2/serverless/${String(endpoint.id)}/workers`, {
      type: 'object',
      required: ['workers', 'summary'],
      properties: {
        workers: {
          type: 'array',
          items: { type: 'object', required: ['id', 'status', 'gpuCount', 'isStale'] },
        },
        summary: { type: 'object' },
      },
    })
  })

  it('templates, network volumes and registries', async () => {
    const template = await answer('POST', '/v2/templates', 'Template', {
      name: 'schemas-template',
      image: 'img:1',
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    await answer('GET', `/v2/templates/${String(template.id)}`, 'Template')
    await answer('PATCH', `/v2/templates/${String(template.id)}`, 'Template', { disk: 30 })
    await answer('GET', '/v2/templates', 'ListTemplates')
    await answer('GET', '/v2/catalog/templates', 'ListTemplates')

    const volume = await answer('POST', '/v2/network-volumes', 'NetworkVolume', {
      name: 'schemas',
      size: 10,
      dataCenterId: 'US-KS-2',
    })
    await answer('GET', `/v2/network-volumes/${String(volume.id)}`, 'NetworkVolume')
    await answer('PATCH', `/v2/network-volumes/${String(volume.id)}`, 'NetworkVolume', { size: 20 })
    await answer('GET', '/v2/network-volumes', 'ListNetworkVolumes')

    const registry = await answer('POST', '/v2/registries', 'Registry', {
      name: 'schemas',
      username: 'u',
      password: 'p',
    })
    await answer('GET', `/v2/registries/${String(registry.id)}`, 'Registry')
    await answer('GET', '/v2/registries', 'ListRegistries')
    await answer('PUT', '/v2/account/ssh-keys', 'SshKeys', { keys: [] }, 200)
    await answer('GET', '/v2/account/ssh-keys', 'SshKeys')
  })

  it('the catalog, with and without availability detail, lists in either form', async () => {
    const { gpus } = (await answer('GET', '/v2/catalog/gpus', 'ListGpuTypes')) as {
      gpus: Array<{ id: string; secure: boolean; community: boolean }>
    }
    // Among them a type one cloud does not offer: its price is still a number.
    expect(gpus.some((g) => !g.secure || !g.community)).toBe(true)
    await answer(
      'GET',
      '/v2/catalog/gpus?include=AVAILABILITY&countryCodes=US&countryCodes=RO',
      'ListGpuTypes',
    )
    for (const gpu of gpus) {
      await answer(
        'GET',
        `/v2/catalog/gpus/${encodeURIComponent(gpu.id)}?include=AVAILABILITY`,
        'GpuType',
      )
    }
    await answer('GET', '/v2/catalog/cpus?include=AVAILABILITY', 'ListCpuTypes')
    await answer('GET', '/v2/catalog/cpus/cpu3c', 'CpuType')
    const { dataCenters } = (await answer(
      'GET',
      '/v2/catalog/datacenters?include=GPU_AVAILABILITY,CPU_AVAILABILITY',
      'ListDataCenters',
    )) as { dataCenters: Array<{ id: string }> }
    await answer('GET', `/v2/catalog/datacenters/${dataCenters[0]!.id}`, 'DataCenter')
  })

  it('billing reports', async () => {
    for (const [path, schema] of Object.entries(BILLING)) {
      await answer('GET', `${path}?bucketSize=hour`, schema)
    }
  })

  it("uses RunPod's operation ids for the operations RunPod documents", async () => {
    const document = (await (await platform.call('/v2/openapi.json', { key: null })).json()) as {
      paths: Record<string, Record<string, { operationId?: string }>>
    }
    const ours = Object.fromEntries(
      Object.keys(RUNPOD_OPERATION_IDS).map((at) => {
        const [method, path] = at.split(' ') as [string, string]
        return [at, document.paths[path]?.[method]?.operationId]
      }),
    )
    expect(ours).toEqual(RUNPOD_OPERATION_IDS)
  })
})
