import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildConsole, screenshot, seriousViolations, signedInConsole } from '../support/browser.js'
import { json } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

/**
 * The console's Secrets page in Chromium, as a member account: a secret is added, listed by
 * name and reference, its value never on the page afterwards (nor in the API's answers), and
 * deleted; the page passes axe-core. Opt-in: PODYARD_TEST_BROWSER=1, as console-browser.test.ts.
 */
const BROWSER = process.env.PODYARD_TEST_BROWSER === '1'
if (!BROWSER) console.log('console secrets suite: skipped: set PODYARD_TEST_BROWSER=1')

const VALUE = 'hf_console-Secret-7f3e91'

interface SecretJson {
  id: string
  name: string
}

describe.runIf(BROWSER)('the console’s Secrets page', { timeout: 180_000 }, () => {
  let platform: TestPlatform
  let browser: Browser
  let page: Page
  let member: string
  let pageErrors: string[] = []

  beforeAll(async () => {
    buildConsole()
    platform = await startTestPlatform()
    member = await otherAccountKey(platform, 'console-secrets@example.com')
    ;({ browser, page, pageErrors } = await signedInConsole(platform.url, member, {
      width: 1280,
      height: 860,
    }))
  }, 150_000)

  afterAll(async () => {
    await browser?.close()
    await platform?.close()
  })

  const axe = (where: string) => seriousViolations(page, where)

  it('adds a secret, lists it by name and reference, and never shows its value again', async () => {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Secrets', exact: true })
      .click()
    await page.getByRole('heading', { name: 'Secrets', level: 1 }).waitFor()
    await page.getByText('No secret yet.').waitFor()
    const failures = await axe('/secrets (empty)')

    await page.getByLabel('Secret name').fill('HF_TOKEN')
    const value = page.getByLabel('Value')
    expect(await value.getAttribute('type')).toBe('password')
    await value.fill(VALUE)
    await page.getByLabel('Description').fill('the hub')
    await page.getByRole('button', { name: 'Add secret' }).click()
    await page.getByRole('cell', { name: '{{ RUNPOD_SECRET_HF_TOKEN }}' }).waitFor()
    await page.getByRole('cell', { name: 'the hub' }).waitFor()
    // The form forgot the value once the secret was stored.
    expect(await page.getByLabel('Value').inputValue()).toBe('')
    expect(await page.content()).not.toContain(VALUE)
    await screenshot(page, 'secrets-listed')
    failures.push(...(await axe('/secrets (listed)')))

    await page.reload()
    await page.getByRole('cell', { name: 'HF_TOKEN', exact: true }).waitFor()
    expect(await page.content()).not.toContain(VALUE)
    const listed = await (await platform.call('/v2/account/secrets', { key: member })).text()
    expect(listed).toContain('HF_TOKEN')
    expect(listed).not.toContain(VALUE)

    // A name the API refuses: its answer is on the page.
    await page.getByLabel('Secret name').fill('not-valid!')
    await page.getByLabel('Value').fill('x')
    await page.getByRole('button', { name: 'Add secret' }).click()
    await page.getByRole('alert').filter({ hasText: /name/ }).waitFor()
    failures.push(...(await axe('/secrets (error)')))
    expect(failures).toEqual([])
  })

  it('deletes a secret after asking', async () => {
    await page.getByRole('button', { name: 'Delete HF_TOKEN' }).click()
    await page.getByRole('button', { name: 'Yes, delete HF_TOKEN' }).click()
    await page.getByText('No secret yet.').waitFor()
    expect(
      await json<SecretJson[]>(await platform.call('/v2/account/secrets', { key: member })),
    ).toEqual([])
    expect(pageErrors).toEqual([])
  })
})
