import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { json } from '../support/http.js'
import type { TestPlatform } from '../support/platform.js'
import { platformStores } from '../support/platform-stores.js'

/**
 * A pod PATCH naming a registry (found by the fuzz suite): the registry was looked up
 * inside the pod's exclusive unit, through the store rather than the unit, and on SQLite that
 * read waited for the unit's own connection forever; from then on every request that read the
 * store hung. Each request here has 5 s to be answered.
 */
describe.each(platformStores())('PATCH /v2/pods/{id} with a registry on $name', (stores) => {
  let platform: TestPlatform
  let podId: string
  let registryId: string

  beforeAll(async () => {
    platform = await stores.start()
    // The pod is never started: only its record matters here.
    await platform.lifecycle.stop()
    registryId = (
      await json<{ id: string }>(
        await platform.call('/v2/registries', {
          method: 'POST',
          json: { name: 'r', username: 'u', password: 'p' },
        }),
        201,
      )
    ).id
    podId = (
      await json<{ id: string }>(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: { name: 'p', image: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        }),
        201,
      )
    ).id
  })
  afterAll(() => platform?.close())

  const patch = (id: string, body: unknown) =>
    platform.call(`/v2/pods/${id}`, {
      method: 'PATCH',
      json: body,
      signal: AbortSignal.timeout(5_000),
    })

  it('answers an unknown registry with 400 and a known one with the pod, and goes on answering', async () => {
    const unknown = await json<{ detail: string }>(await patch(podId, { registry: 'nope' }), 400)
    expect(unknown.detail).toBe('registry "nope" not found')
    const known = await json<{ registry: string }>(await patch(podId, { registry: registryId }))
    expect(known.registry).toBe(registryId)
    const account = await platform.call('/v2/account', { signal: AbortSignal.timeout(5_000) })
    expect(account.status).toBe(200)
  })

  it('still answers 404 first for an unknown pod', async () => {
    await json(await patch('nosuchpod00000', { registry: 'nope' }), 404)
  })
})
