import { beforeAll, describe, expect, it } from 'vitest'
import { otherAccountKey, type TestPlatform } from '../support/platform.js'
import {
  graphqlPodsSuite,
  pythonCreate,
  RTX_4090,
  RUNPODCTL_CREATE,
} from '../support/graphql-pods-client.js'

/**
 * Errors of the GraphQL pod operations, to documents shaped like the real clients' (wire-compat
 * §6): domain errors answer HTTP 200 with errors[] and data.<op> null, with the codes and
 * messages the clients show; a bad key answers 401. The operations themselves are in
 * graphql-pods-operations.test.ts.
 */

const H200 = 'NVIDIA H200'

describe('GraphQL pods', () => {
  const suite = graphqlPodsSuite()
  const { graphql, ok, failed, createPython, restPod } = suite
  let platform: TestPlatform
  beforeAll(() => {
    platform = suite.platform()
  })

  describe('errors', () => {
    it('no capacity, unknown GPU type and validation answer HTTP 200 with errors[] and data.op null', async () => {
      const full = await failed(
        'podFindAndDeployOnDemand',
        { query: pythonCreate({ gpuTypeId: H200, gpuCount: 9 }) },
        'NO_CAPACITY',
      )
      expect(full.message).toMatch(/^no capacity in any cloud: SECURE: .*9 free NVIDIA H200/)

      const unknown = await failed(
        'podFindAndDeployOnDemand',
        { query: pythonCreate({ gpuTypeId: 'NVIDIA GeForce RTX 9999' }) },
        'RULE_CONFLICT',
      )
      expect(unknown.message).toBe(
        'unknown GPU type "NVIDIA GeForce RTX 9999": list the GPU types with the gpuTypes query',
      )

      const invalid = await failed(
        'podFindAndDeployOnDemand',
        {
          query: RUNPODCTL_CREATE,
          variables: {
            input: {
              gpuTypeId: RTX_4090,
              containerDiskInGb: 0,
              ports: '8888/http,nope',
              env: [{ key: '1BAD', value: 'x' }],
            },
          },
        },
        'VALIDATION_FAILED',
      )
      expect(invalid.extensions!.errors).toEqual([
        'input.imageName: is required unless templateId gives it',
        'input.containerDiskInGb: must be >= 1',
        'input.ports[1]: must be <port>/<protocol> with a port 1-65535 and protocol http, tcp or udp',
        'input.env.1BAD: must be a variable name (letters, digits and _, not starting with a digit)',
      ])
      expect(invalid.message).toMatch(/^the request failed validation: input.imageName/)
    })

    it('refuses mutations to a read-only key (FORBIDDEN) and lets it read', async () => {
      const response = await platform.call('/v2/account/api-keys', {
        method: 'POST',
        json: { name: 'ro', permission: 'READ_ONLY' },
      })
      const { key } = (await response.json()) as { key: string }
      const error = await failed(
        'podFindAndDeployOnDemand',
        { query: pythonCreate({}) },
        'FORBIDDEN',
        key,
      )
      expect(error.message).toBe('this API key is read-only: mutations need a read-write key')
      await failed(
        'podTerminate',
        { query: 'mutation { podTerminate(input: {podId: "x"}) }' },
        'FORBIDDEN',
        key,
      )
      expect((await ok({ query: '{ myself { id pods { id } } }' }, key)).myself.id).toMatch(
        /^acct_/,
      )
    })

    it('401 with errors[] for a bad key', async () => {
      const result = await graphql({ query: pythonCreate({}) }, `pyd_${'x'.repeat(40)}`)
      expect(result.status).toBe(401)
      expect(result.body).toMatchObject({
        data: null,
        errors: [{ extensions: { code: 'UNAUTHENTICATED' } }],
      })
    })

    it('hides another account`s pods, and answers invalid transitions with the reason', async () => {
      const pod = await createPython({ name: 'mine' })
      const other = await otherAccountKey(platform, 'other-graphql@example.com')
      const hidden = await failed(
        'pod',
        { query: `{ pod(input: {podId: "${pod.id}"}) { id } }` },
        'NOT_FOUND',
        other,
      )
      expect(hidden.message).toBe(`pod ${pod.id} not found`)
      await failed(
        'podStop',
        { query: `mutation { podStop(input: {podId: "${pod.id}"}) { id } }` },
        'NOT_FOUND',
        other,
      )

      await expect
        .poll(async () => (await restPod(pod.id)).status, { timeout: 20_000 })
        .toBe('RUNNING')
      const resume = await failed(
        'podResume',
        { query: `mutation { podResume(input: {podId: "${pod.id}"}) { id } }` },
        'INVALID_STATE',
      )
      expect(resume.message).toMatch(
        /cannot start pod .* while it is (PROVISIONING|STARTING|RUNNING)/,
      )
      await ok({ query: `mutation { podStop(input: {podId: "${pod.id}"}) { id } }` })
      const count = await failed(
        'podResume',
        { query: `mutation { podResume(input: {podId: "${pod.id}", gpuCount: 2}) { id } }` },
        'RULE_CONFLICT',
      )
      expect(count.message).toMatch(/has 1 GPUs and a pod's GPU count is fixed at create/)
    })

    it('refuses a bid resume of an on-demand pod and a spot rent without a bid', async () => {
      const created = await ok({
        query:
          'mutation { podFindAndDeployOnDemand(input: {name: "no-bid", imageName: "ubuntu", gpuTypeId: "NVIDIA GeForce RTX 4090", cloudType: SECURE, gpuCount: 1, dockerArgs: "sleep 600"}) { id } }',
      })
      const id = (created.podFindAndDeployOnDemand as { id: string }).id
      await ok({ query: `mutation { podStop(input: {podId: "${id}"}) { id } }` })
      const bid = await failed(
        'podBidResume',
        {
          query: `mutation { podBidResume(input: {podId: "${id}", bidPerGpu: 0.2, gpuCount: 1}) { id costPerHr desiredStatus lastStatusChange } }`,
        },
        'RULE_CONFLICT',
      )
      expect(bid.message).toMatch(/is an on-demand pod: start it with podResume/)
      const rent = await failed(
        'podRentInterruptable',
        {
          query:
            'mutation { podRentInterruptable(input: {gpuTypeId: "NVIDIA GeForce RTX 4090", imageName: "y"}) { id imageName env machineId machine { podHostId } } }',
        },
        'VALIDATION_FAILED',
      )
      expect(rent.message).toMatch(/input\.bidPerGpu: is required/)
    })

    it('refuses a deploy that would cost more per hour than its deployCost, and keeps one that does not', async () => {
      const gpu = await failed(
        'podFindAndDeployOnDemand',
        {
          query:
            'mutation { podFindAndDeployOnDemand(input: {name: "capped", imageName: "ubuntu", gpuTypeId: "NVIDIA GeForce RTX 4090", cloudType: SECURE, gpuCount: 2, deployCost: 0.6}) { id } }',
        },
        'RULE_CONFLICT',
      )
      expect(gpu.message).toMatch(
        /the pod would cost 1\.18 USD per hour, more than the deployCost of 0\.6 it was given/,
      )
      const cpu = await failed(
        'deployCpuPod',
        {
          query:
            'mutation { deployCpuPod(input: {name: "capped-cpu", imageName: "ubuntu", instanceId: "cpu3c-2-4", deployCost: 0.07}) { id } }',
        },
        'RULE_CONFLICT',
      )
      expect(cpu.message).toMatch(
        /would cost 0\.08 USD per hour, more than the deployCost of 0\.07/,
      )
      // A cap equal to the price, as dstack sends the offer's price.
      const kept = await ok({
        query:
          'mutation { deployCpuPod(input: {name: "at-cap", imageName: "ubuntu", instanceId: "cpu3c-2-4", deployCost: 0.08}) { id costPerHr } }',
      })
      const pod = kept.deployCpuPod as { id: string; costPerHr: number }
      expect(pod.costPerHr).toBe(0.08)
      await ok({ query: `mutation { podTerminate(input: {podId: "${pod.id}"}) }` })
    })
  })
})
