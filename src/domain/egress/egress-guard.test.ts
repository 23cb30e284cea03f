import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../shared/clock.js'
import { EgressGuard, EGRESS_VET_CACHE_MS, type HostResolver } from './egress-guard.js'
import { EgressPolicy, parseAllowList, serverSelf } from './egress-policy.js'

/** A resolver from a table: each name's answers in turn (the last repeats); unknown names fail. */
function tableResolver(table: Record<string, string[][]>) {
  const asked: string[] = []
  const resolve: HostResolver = async (host) => {
    asked.push(host)
    const answers = table[host]
    if (!answers)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return answers.length > 1 ? answers.shift()! : answers[0]!
  }
  return { resolve, asked }
}

function guardWith(resolve: HostResolver, allow: string[] = [], clock = new ManualClock()) {
  return new EgressGuard({
    policy: new EgressPolicy({
      allow: parseAllowList(allow).allow,
      self: () => serverSelf([], [{ address: '127.0.0.1', port: 8080 }]),
    }),
    resolve,
    clock,
    settingName: 'webhooks.allowInternal',
    vetTimeoutMs: 50,
  })
}

describe('egress guard', () => {
  describe('vet (a URL being accepted)', () => {
    it('refuses an internal address with the rule and the setting', async () => {
      const guard = guardWith(tableResolver({}).resolve)
      expect(await guard.vet('http://10.0.0.1/')).toEqual({
        ok: false,
        rule: 'private',
        problem:
          "10.0.0.1 is a private address (RFC 1918); the platform does not send requests to internal addresses on a user's behalf unless the operator allows them (webhooks.allowInternal)",
      })
      expect(await guard.vet('ftp://example.com/')).toMatchObject({ ok: false, rule: 'scheme' })
      expect(await guard.vet('http://localhost:3000/')).toMatchObject({
        ok: false,
        rule: 'loopback-name',
      })
    })

    it('resolves names: refused when any address is internal, without saying which', async () => {
      const { resolve } = tableResolver({
        'private.example': [['10.1.2.3']],
        'mixed.example': [['93.184.216.34', '127.0.0.1']],
        'public.example': [['93.184.216.34', '2606:4700:4700::1111']],
      })
      const guard = guardWith(resolve)
      const refused = await guard.vet('http://private.example/hook')
      expect(refused).toMatchObject({ ok: false, rule: 'private' })
      expect(!refused.ok && refused.problem).toMatch(
        /^private\.example resolves to a private address \(RFC 1918\);/,
      )
      expect(!refused.ok && refused.problem).not.toContain('10.1.2.3')
      expect(await guard.vet('http://mixed.example/')).toMatchObject({
        ok: false,
        rule: 'loopback',
      })
      expect(await guard.vet('http://public.example/')).toEqual({ ok: true, deferred: false })
    })

    it('accepts a name that does not resolve, or not in time, to check it at delivery', async () => {
      const never: HostResolver = () => new Promise(() => {})
      expect(await guardWith(tableResolver({}).resolve).vet('https://nowhere.example/')).toEqual({
        ok: true,
        deferred: true,
      })
      expect(await guardWith(never).vet('https://slow.example/')).toEqual({
        ok: true,
        deferred: true,
      })
    })

    it('keeps a resolution for a while, so that submissions stay cheap', async () => {
      const clock = new ManualClock()
      const { resolve, asked } = tableResolver({
        'hooks.example': [['93.184.216.34'], ['10.0.0.1']],
      })
      const guard = guardWith(resolve, [], clock)
      expect((await guard.vet('http://hooks.example/a')).ok).toBe(true)
      expect((await guard.vet('http://hooks.example/b')).ok).toBe(true)
      expect(asked).toEqual(['hooks.example'])
      clock.advance(EGRESS_VET_CACHE_MS)
      expect(await guard.vet('http://hooks.example/c')).toMatchObject({
        ok: false,
        rule: 'private',
      })
      expect(asked).toHaveLength(2)
    })
  })

  describe('destination (about to connect)', () => {
    it('resolves afresh: a name public at submission and internal later is refused', async () => {
      const { resolve, asked } = tableResolver({
        'rebind.example': [['93.184.216.34'], ['127.0.0.1']],
      })
      const guard = guardWith(resolve)
      expect((await guard.vet('http://rebind.example/')).ok).toBe(true)
      const destination = await guard.destination('http://rebind.example/')
      expect(destination).toEqual({
        ok: false,
        failure: 'refused',
        rule: 'loopback',
        // For the operator's log only.
        detail: 'rebind.example (127.0.0.1) is a loopback address (127.0.0.0/8)',
      })
      expect(asked).toEqual(['rebind.example', 'rebind.example'])
    })

    it('returns every checked address of an allowed name, and nothing else', async () => {
      const { resolve } = tableResolver({
        'hooks.example': [['93.184.216.34', '2606:4700:4700::1111']],
        'hooks.internal': [['10.0.0.7']],
      })
      const guard = guardWith(resolve, ['hooks.internal'])
      const destination = await guard.destination('https://hooks.example/x')
      expect(destination).toMatchObject({
        ok: true,
        addresses: [
          { address: '93.184.216.34', family: 4 },
          { address: '2606:4700:4700::1111', family: 6 },
        ],
      })
      expect(destination.ok && destination.target).toMatchObject({
        host: 'hooks.example',
        port: 443,
      })
      expect(await guard.destination('http://hooks.internal:9000/')).toMatchObject({
        ok: true,
        addresses: [{ address: '10.0.0.7', family: 4 }],
      })
    })

    it('takes an address host as it is, checked like any other', async () => {
      const guard = guardWith(tableResolver({}).resolve, ['127.0.0.0/8'])
      expect(await guard.destination('http://127.0.0.2:9/')).toMatchObject({
        ok: true,
        addresses: [{ address: '127.0.0.2', family: 4 }],
      })
      expect(await guard.destination('http://127.0.0.1:8080/')).toMatchObject({
        ok: false,
        failure: 'refused',
        rule: 'own-listener',
      })
      expect(await guard.destination('data:,x')).toMatchObject({ ok: false, rule: 'scheme' })
    })

    it('tells a name that does not resolve from a refusal', async () => {
      const guard = guardWith(tableResolver({ 'empty.example': [[]] }).resolve)
      expect(await guard.destination('http://nowhere.example/')).toEqual({
        ok: false,
        failure: 'unresolved',
        detail: 'nowhere.example: ENOTFOUND: getaddrinfo ENOTFOUND nowhere.example',
      })
      expect(await guard.destination('http://empty.example/')).toMatchObject({
        ok: false,
        failure: 'unresolved',
      })
    })

    it('stops waiting for a resolver when the signal aborts', async () => {
      const guard = guardWith(() => new Promise(() => {}))
      const abort = new AbortController()
      const pending = guard.destination('http://slow.example/', abort.signal)
      abort.abort()
      expect(await pending).toMatchObject({ ok: false, failure: 'unresolved' })
    })
  })
})
