import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { screenshot } from '../support/browser.js'
import { signIn, startConsoleRig } from '../support/console-browser-fixtures.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'

/**
 * The web console in Chromium, in tabs of their own beside the admin's journey of
 * console-browser.test.ts: the keyboard alone (sign in, skip to the content, make a key), a
 * member's pages (why its workers fail, a pod from a template, billing's periods with the
 * reports held back) and billing shown honestly (not enforced, or enforced) to members. An
 * uncaught exception in a page fails the suite at its end. Screenshots go to
 * test-results/console/.
 *
 * Opt-in: PODYARD_TEST_BROWSER=1 (`.ci/run` installs chromium and sets it).
 */
const BROWSER = process.env.PODYARD_TEST_BROWSER === '1'
if (!BROWSER) {
  console.log(
    'console members browser suite: skipped: set PODYARD_TEST_BROWSER=1 to run it (needs chromium)',
  )
}

describe.runIf(BROWSER)('the web console in Chromium', { timeout: 240_000 }, () => {
  let platform: TestPlatform
  let browser: Browser
  let context: BrowserContext
  let base: string
  const pageErrors: string[] = []

  beforeAll(async () => {
    ;({ platform, browser, context } = await startConsoleRig())
    base = platform.url
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    await platform?.close()
    // The admin's journey ends on this check (with axe); the pages of this file end here.
    expect(pageErrors).toEqual([])
  })

  it('is usable with the keyboard alone: sign in, skip to the content, make a key', async () => {
    const own = await browser.newContext()
    const keyboard = await own.newPage()
    await keyboard.goto(`${base}/`)
    // The page is rendered by script after load: Tab once the sign-in form is there.
    await keyboard.getByLabel('API key').waitFor()
    await keyboard.keyboard.press('Tab')
    expect(await keyboard.evaluate(() => document.activeElement?.id)).toBe('api-key')
    await keyboard.keyboard.type(TEST_ADMIN_KEY)
    await keyboard.keyboard.press('Enter')
    await keyboard.getByRole('heading', { name: 'Dashboard' }).waitFor()

    // The first Tab of a page reaches the skip link, which moves the focus to the content.
    await keyboard.keyboard.press('Tab')
    expect(await keyboard.evaluate(() => document.activeElement?.textContent)).toBe(
      'Skip to content',
    )
    await keyboard.keyboard.press('Enter')
    expect(await keyboard.evaluate(() => document.activeElement?.id)).toBe('main')

    // Tab through the navigation to "API keys"; after the page changes, the focus is on the
    // content again, and the next Tab is the first field of the form.
    const focusedText = () => keyboard.evaluate(() => document.activeElement?.textContent ?? '')
    await keyboard.keyboard.press('Shift+Tab')
    let presses = 0
    while ((await focusedText()) !== 'API keys' && presses++ < 30) {
      await keyboard.keyboard.press('Shift+Tab')
    }
    expect(await focusedText()).toBe('API keys')
    await keyboard.keyboard.press('Enter')
    await keyboard.getByRole('heading', { name: 'API keys' }).waitFor()
    expect(await keyboard.evaluate(() => document.activeElement?.id)).toBe('main')
    await keyboard.keyboard.press('Tab')
    expect(
      await keyboard.getByLabel('Key name').evaluate((e) => e === document.activeElement),
    ).toBe(true)
    await keyboard.keyboard.type('typed')
    await keyboard.keyboard.press('Enter')
    const shown = keyboard.getByLabel('New API key')
    await shown.waitFor()
    expect(await shown.inputValue()).toMatch(/^pyd_/)
    await own.close()
  })

  describe('as a member (an account that is not the admin)', () => {
    let memberKey: string
    let member: Page
    const podIds: string[] = []
    const asMember = (pathAndQuery: string, init: Parameters<TestPlatform['call']>[1] = {}) =>
      platform.call(pathAndQuery, { ...init, key: memberKey })

    beforeAll(async () => {
      memberKey = await otherAccountKey(platform, 'deployer@example.com')
      member = await context.newPage()
      member.on('pageerror', (error) => pageErrors.push(error.message))
      await member.goto(`${base}/`)
      await signIn(member, memberKey)
      await member.getByRole('heading', { name: 'Dashboard' }).waitFor()
    })

    afterAll(async () => {
      // The member's pods go, so that nothing of theirs is left on the hosts.
      for (const id of podIds) await asMember(`/v2/pods/${id}`, { method: 'DELETE' })
      await member?.close()
    })

    it('shows, while Run sync waits, why the workers fail and their last lines', async () => {
      const created = await asMember('/v2/serverless', {
        method: 'POST',
        json: {
          name: 'cannot-start',
          image: 'worker:1',
          // Its interpreter is not there: the shell's 127 before it asks for a job.
          args: 'echo "loading the handler"; no-such-interpreter handler.py',
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
          workers: { min: 1, max: 1 },
        },
      })
      expect(created.status).toBe(201)
      const id = ((await created.json()) as { id: string }).id
      await member.goto(`${base}/serverless/${id}`)
      await member.getByLabel('Request (JSON)').fill('{"input": {}}')
      await member.getByRole('button', { name: 'Run sync' }).click()
      const result = member.locator('.job-result')
      await expect
        .poll(() => result.textContent(), { timeout: 60_000 })
        .toContain('exited with code 127 (command not found) before asking for a job')
      await expect
        .poll(() => member.getByLabel('Last lines of the failed worker').textContent())
        .toMatch(/loading the handler\n.*no-such-interpreter: (command )?not found/)
      await asMember(`/v2/serverless/${id}`, { method: 'DELETE' })
    })

    it('deploys a pod from a template: the fields show its ports and disk, left alone they are the pod’s, typed ones win', async () => {
      const template = await json<{ id: string }>(
        await asMember('/v2/templates', {
          method: 'POST',
          json: {
            name: 'web',
            image: 'busybox',
            args: 'sleep 600',
            ports: ['8888/http', '22/tcp'],
            disk: 35,
          },
        }),
        201,
      )
      const deploy = async (
        name: string,
        typed: { ports?: string; disk?: string; command?: string } = {},
      ) => {
        await member.goto(`${base}/pods/new`)
        await member.getByLabel('Name', { exact: true }).fill(name)
        await member.getByLabel('Template').selectOption({ label: 'web (busybox)' })
        // The form shows what the template gives, as it loads it (soft: the pod is checked too).
        const shown = async (label: string) =>
          member.getByLabel(label, { exact: true }).inputValue()
        expect.soft(await shown('Ports')).toBe('8888/http, 22/tcp')
        expect.soft(await shown('Container disk (GB)')).toBe('35')
        expect.soft(await shown('Image')).toBe('busybox')
        expect.soft(await shown('Command')).toBe('sleep 600')
        if (typed.ports !== undefined) await member.getByLabel('Ports').fill(typed.ports)
        if (typed.disk !== undefined)
          await member.getByLabel('Container disk (GB)').fill(typed.disk)
        if (typed.command !== undefined)
          await member.getByLabel('Command', { exact: true }).fill(typed.command)
        await member.getByRole('radio', { name: 'CPU' }).check()
        await member.getByRole('button', { name: 'Deploy pod' }).click()
        await member.waitForURL(/\/pods\/(?!new$)[a-z0-9]+$/)
        const id = member.url().split('/').pop()!
        podIds.push(id)
        return json<{ image: string; args: string; ports: string[]; disk: number }>(
          await asMember(`/v2/pods/${id}`),
        )
      }

      const untouched = await deploy('from-template')
      expect(untouched).toMatchObject({
        image: 'busybox',
        args: 'sleep 600',
        ports: ['8888/http', '22/tcp'],
        disk: 35,
      })
      await screenshot(member, '12-pod-from-template')

      // Typed values win; a field emptied is left to the template, as the hint says.
      const typed = await deploy('typed-over', { ports: '9000/http', disk: '40', command: '' })
      expect(typed).toMatchObject({
        image: 'busybox',
        args: 'sleep 600',
        ports: ['9000/http'],
        disk: 40,
      })
      expect((await json(await asMember(`/v2/templates/${template.id}`))).ports).toEqual([
        '8888/http',
        '22/tcp',
      ])
    })

    it('shows each period’s own buckets once its report arrives, without rows of the last one', async () => {
      // A pod of the member's that has spent something, as the meter charged it.
      const spender = await json<{ id: string }>(
        await asMember('/v2/pods', {
          method: 'POST',
          json: {
            name: 'spender',
            image: 'busybox',
            args: 'sleep 600',
            cpu: { id: 'cpu3c', vcpuCount: 2 },
          },
        }),
        201,
      )
      podIds.push(spender.id)
      const spent = async () => {
        await platform.meter.tick()
        const report = await json<{ metadata: { totals: { totalAmount: number } } }>(
          await asMember('/v2/billing?bucketSize=day&lastN=1'),
        )
        return report.metadata.totals.totalAmount
      }
      await expect.poll(spent, { timeout: 30_000, interval: 500 }).toBeGreaterThan(0)
      const periods = [
        ['last 24 hours, by hour', 'hour', 24],
        ['last 7 days, by day', 'day', 7],
        ['last 30 days, by day', 'day', 30],
      ] as const
      /** The report's buckets as the console labels them, in the browser's own locale and zone. */
      const expectedLabels = async (bucketSize: string, lastN: number) => {
        const report = await json<{ records: Array<{ startTime: string }> }>(
          await asMember(`/v2/billing?bucketSize=${bucketSize}&lastN=${lastN}`),
        )
        expect(report.records).toHaveLength(lastN)
        return member.evaluate(
          ([starts, size]) =>
            starts.map((start) =>
              size === 'hour'
                ? new Date(start).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
                : new Date(start).toLocaleDateString(),
            ),
          [report.records.map((r) => r.startTime), bucketSize] as const,
        )
      }
      /** The period column of a chart's table (the table is in a closed <details>: hidden too). */
      const labelsOf = (chart: string) =>
        member
          .locator('figure')
          .filter({ hasText: `${chart} as a table` })
          .locator('tbody th')
          .allTextContents()

      await member
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Billing' })
        .click()
      await member.getByRole('img', { name: /^Spend by kind:/ }).waitFor({ timeout: 30_000 })
      // The next reports arrive late, as over a slow network: the period changes first.
      await member.route(/\/v2\/billing(\/\w+)?\?/, async (route) => {
        await new Promise((resolve) => setTimeout(resolve, 1500))
        await route.continue().catch(() => undefined)
      })
      for (const [label, bucketSize, lastN] of periods) {
        if (bucketSize !== 'hour') {
          await member.getByLabel('Period').selectOption({ label })
          // While the new report is on its way, the page says so, and shows no row of the last
          // period labelled as this one (soft: the rows once it arrives are checked too).
          const meanwhile = await labelsOf('Spend by kind')
          expect.soft(new Set(meanwhile).size, meanwhile.join(' | ')).toBe(meanwhile.length)
          const loading = member.getByRole('status').filter({ hasText: `Loading the ${label}` })
          expect.soft(await loading.count()).toBe(1)
        }
        const expected = await expectedLabels(bucketSize, lastN)
        expect(new Set(expected).size).toBe(lastN)
        for (const chart of ['Spend by kind', 'Spend by pod and endpoint']) {
          await expect
            .poll(() => labelsOf(chart), { timeout: 15_000, interval: 250 })
            .toEqual(expected)
        }
      }
      await member.unroute(/\/v2\/billing(\/\w+)?\?/)
      await screenshot(member, '13-billing-30-days')
    })
  })

  describe('billing shown honestly, as a member', () => {
    const NOTE =
      '(not enforced: this server runs everything whatever the balance; billing.enforce is off)'

    /** A fresh member of `target`, signed in on a page of its own (its own storage). */
    const memberOn = async (target: TestPlatform, email: string) => {
      const own = await browser.newContext({ viewport: { width: 1280, height: 860 } })
      const tab = await own.newPage()
      tab.on('pageerror', (error) => pageErrors.push(error.message))
      await tab.goto(`${target.url}/`)
      await signIn(tab, await otherAccountKey(target, email))
      await tab.getByRole('heading', { name: 'Dashboard' }).waitFor()
      return { tab, own }
    }
    const accountStats = (tab: Page) => tab.locator('.stats').first()

    it('says beside the balance and spend limit that they are not enforced (billing.enforce off, the default)', async () => {
      const { tab, own } = await memberOn(platform, 'unenforced@example.com')
      try {
        await expect.poll(() => accountStats(tab).textContent()).toContain(NOTE)
        expect(await accountStats(tab).textContent()).toMatch(/Spend limit.*\/h\(not enforced\)/)
        expect(await tab.locator('.topbar').textContent()).toContain('(not enforced)')
        // Nothing ran for this account; the dashboard does not claim more than it can know.
        await expect
          .poll(() => tab.getByRole('region', { name: 'Recent jobs' }).textContent())
          .toContain('No job results to show: none ran, or their results expired')
        await screenshot(tab, '14-balance-not-enforced')
        await tab
          .getByRole('navigation', { name: 'Main' })
          .getByRole('link', { name: 'Billing' })
          .click()
        await tab.getByRole('heading', { name: 'Billing', level: 1 }).waitFor()
        await expect.poll(() => accountStats(tab).textContent()).toContain(NOTE)
      } finally {
        await own.close()
      }
    })

    it('says nothing of the kind where billing.enforce is on', async () => {
      const enforcing = await startTestPlatform({
        billing: { meterIntervalMs: 10_000, enforce: true },
      })
      try {
        const { tab, own } = await memberOn(enforcing, 'enforced@example.com')
        try {
          await expect.poll(() => accountStats(tab).textContent()).toContain('Spend limit')
          expect(await tab.locator('main').textContent()).not.toContain('not enforced')
          expect(await tab.locator('.topbar').textContent()).not.toContain('not enforced')
        } finally {
          await own.close()
        }
      } finally {
        await enforcing.close()
      }
    })
  })
})
