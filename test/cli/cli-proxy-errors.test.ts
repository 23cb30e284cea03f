import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnswerProxy, type AnswerProxy, type ProxyAction } from '../support/answer-proxy.js'
import { runCli, settingsFreeEnv } from '../support/cli.js'
import { json } from '../support/http.js'
import { startTestPlatform, TEST_ADMIN_KEY, type TestPlatform } from '../support/platform.js'

/**
 * The CLI behind a proxy that answers for itself: a load balancer's HTML 502
 * read as JSON printed `Unexpected token '<'`. Real bin, a real HTTP proxy on 127.0.0.1 in front
 * of a real server; each answer the proxy makes up must be named as what it is.
 */
const BAD_GATEWAY_PAGE =
  '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>'

describe('podyard CLI behind a proxy', () => {
  let platform: TestPlatform
  let proxy: AnswerProxy
  let home: string
  let podId: string

  /** `podyard <args>` through the proxy, as a user with the admin key runs it. */
  const cli = (args: string[], answer: ProxyAction = 'forward') => {
    proxy.rule = () => answer
    return runCli([...args, '--url', proxy.url, '--api-key', TEST_ADMIN_KEY], settingsFreeEnv(home))
  }
  const html = (status: number, body: string): ProxyAction => ({
    status,
    headers: { 'content-type': 'text/html' },
    body,
  })

  beforeAll(async () => {
    platform = await startTestPlatform({ sandbox: 'none' })
    proxy = await startAnswerProxy(() => platform.url)
    home = mkdtempSync(path.join(tmpdir(), 'podyard-cli-proxy-'))
    podId = (
      await json<{ id: string }>(
        await platform.call('/v2/pods', {
          method: 'POST',
          json: { name: 'behind-proxy', image: 'busybox', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        }),
        201,
      )
    ).id
  })
  afterAll(async () => {
    await proxy?.close()
    await platform?.close()
    rmSync(home, { recursive: true, force: true })
  })

  it("names a load balancer's HTML 502 as not podyard's, with its status and URL", async () => {
    const plain = await cli(['pods', 'list'], html(502, BAD_GATEWAY_PAGE))
    expect(plain.code).toBe(7)
    expect(plain.stdout).toBe('')
    expect(plain.stderr).toBe(
      `podyard: 502 Bad Gateway from ${proxy.url}/v2/pods (not podyard's answer: check the proxy)\n`,
    )
    const scripted = await cli(['pods', 'get', podId, '--json'], html(502, BAD_GATEWAY_PAGE))
    expect(scripted.code).toBe(7)
    expect(JSON.parse(scripted.stderr)).toEqual({
      error: {
        message: `502 Bad Gateway from ${proxy.url}/v2/pods/${podId} (not podyard's answer: check the proxy)`,
        exitCode: 7,
        status: 502,
      },
    })
    // Through the same proxy, forwarding, the same commands work.
    const listed = await cli(['pods', 'list', '--json'])
    expect(listed.code, listed.stderr).toBe(0)
    expect((JSON.parse(listed.stdout) as Array<{ id: string }>).map((p) => p.id)).toContain(podId)
  })

  it('names other answers that are not podyard’s: errors without problem+json, successes without JSON', async () => {
    const cases: Array<{ answer: ProxyAction; says: string; code: number }> = [
      {
        answer: { status: 503, body: '' },
        says: `503 Service Unavailable from ${proxy.url}/v2/pods (not podyard's answer: check the proxy)`,
        code: 7,
      },
      {
        answer: { status: 404, headers: { 'content-type': 'text/plain' }, body: 'no such site' },
        says: `404 Not Found from ${proxy.url}/v2/pods (not podyard's answer: check the proxy)`,
        code: 1,
      },
      {
        answer: {
          status: 500,
          headers: { 'content-type': 'application/json' },
          body: '{"message":"Internal server error"}',
        },
        says: `500 Internal Server Error from ${proxy.url}/v2/pods (not podyard's answer: check the proxy)`,
        code: 7,
      },
      {
        // A proxy's sign-in page, or a URL that is some other web site.
        answer: html(200, '<!doctype html><title>Sign in</title>'),
        says: `200 OK from ${proxy.url}/v2/pods is text/html, not JSON (not podyard's answer: check the URL and the proxy)`,
        code: 1,
      },
      {
        answer: {
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: '{"pods": [',
        },
        says: `200 OK from ${proxy.url}/v2/pods is not valid JSON (not podyard's answer: check the URL and the proxy)`,
        code: 1,
      },
    ]
    // A 5xx exits 7 (server error), the rest 1: none of them is podyard's refusal.
    for (const { answer, says, code } of cases) {
      const result = await cli(['pods', 'list'], answer)
      expect(result.code, says).toBe(code)
      expect(result.stderr).toBe(`podyard: ${says}\n`)
    }
  })

  it("still prints podyard's own refusals as before, through the proxy", async () => {
    proxy.rule = () => 'forward'
    const refused = await runCli(
      [
        'pods',
        'get',
        'nope00000000000',
        '--url',
        proxy.url,
        '--api-key',
        'pyd_not-a-key',
        '--json',
      ],
      { PODYARD_PROFILES_FILE: path.join(home, 'profiles.json'), PODYARD_URL: '' },
    )
    expect(refused.code).toBe(3)
    expect(JSON.parse(refused.stderr)).toMatchObject({
      error: {
        status: 401,
        title: 'Unauthorized',
        message: expect.stringMatching(/^401 Unauthorized: /),
      },
    })
    const missing = await cli(['pods', 'get', 'nope00000000000'])
    expect(missing.stderr).toMatch(/^podyard: 404 Not Found: pod nope00000000000 not found/)
  })

  it('names a made-up answer to a log stream the same way', async () => {
    const bad = await cli(['pods', 'logs', podId], html(502, BAD_GATEWAY_PAGE))
    expect(bad.code).toBe(7)
    expect(bad.stderr).toBe(
      `podyard: 502 Bad Gateway from ${proxy.url}/v2/pods/${podId}/logs?tail=100&source=container&follow=false (not podyard's answer: check the proxy)\n`,
    )
    const page = await cli(
      ['pods', 'logs', podId],
      html(200, '<!doctype html><title>Sign in</title>'),
    )
    expect(page.code).toBe(1)
    expect(page.stderr).toBe(
      `podyard: 200 OK from ${proxy.url}/v2/pods/${podId}/logs?tail=100&source=container&follow=false is text/html, not an event stream (not podyard's answer: check the URL and the proxy)\n`,
    )
    const forwarded = await cli(['pods', 'logs', podId])
    expect(forwarded.code, forwarded.stderr).toBe(0)
  })
})
