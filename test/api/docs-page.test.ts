import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestPlatform, type TestPlatform } from '../support/platform.js'

/** Opt-in: needs Debian's Chromium (`apt-get install chromium`); on in CI. */
const BROWSER = process.env.PODYARD_TEST_BROWSER === '1'
const CHROMIUM = process.env.PODYARD_CHROMIUM_PATH ?? '/usr/bin/chromium'
/** A host name that is not loopback to the browser, resolved to this machine's server. */
const HOST = 'podyard.test'

describe.runIf(BROWSER)('the docs page in Chromium', () => {
  let platform: TestPlatform
  let browser: Browser

  beforeAll(async () => {
    platform = await startTestPlatform()
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [`--host-resolver-rules=MAP ${HOST} 127.0.0.1`, '--no-sandbox'],
    })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await platform?.close()
  })

  it(
    'shows the API over plain HTTP by a host name, with podyard name and real examples',
    { timeout: 60_000 },
    async () => {
      const port = new URL(platform.url).port
      const page = await browser.newPage()
      const problems: string[] = []
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text())
      })
      page.on('requestfailed', (request) =>
        problems.push(`${request.url()}: ${request.failure()?.errorText}`),
      )
      const response = await page.goto(`http://${HOST}:${port}/v2/docs`)
      expect(response?.status()).toBe(200)
      expect(response?.headers()['content-security-policy']).not.toMatch(/upgrade-insecure/)

      await page.locator('.information-container .title').waitFor({ timeout: 30_000 })
      expect(await page.title()).toBe('podyard API docs')
      expect(await page.locator('.information-container .title').innerText()).toContain(
        'podyard API',
      )
      expect(await page.locator('.topbar img').getAttribute('src')).toMatch(/^data:image\/svg/)
      for (const tag of ['Pods', 'Serverless', 'Job API', 'Public models', 'Worker protocol']) {
        await expect.poll(() => page.locator(`h3.opblock-tag[data-tag="${tag}"]`).count()).toBe(1)
      }

      // The body editor of /run shows the documented example, not `"string"`.
      await page.locator('#operations-Job_API-runJob').click()
      const example = page
        .locator(
          '#operations-Job_API-runJob .body-param__example, #operations-Job_API-runJob .highlight-code',
        )
        .first()
      await example.waitFor()
      expect(await example.innerText()).toContain('a lighthouse at dusk')

      const shots = process.env.PODYARD_TEST_SCREENSHOTS
      if (shots) await page.screenshot({ path: `${shots}/docs-page.png` })
      expect(problems).toEqual([])
    },
  )
})
