import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildConsole, screenshot, seriousViolations, signedInConsole } from '../support/browser.js'
import { CPU_FLEET_WITH_LOCAL_HOST } from '../support/fleet-yaml.js'
import { json } from '../support/http.js'
import {
  otherAccountKey,
  startTestPlatform,
  TEST_ADMIN_KEY,
  type TestPlatform,
} from '../support/platform.js'
import { makeCertificates } from '../support/test-certificates.js'

/**
 * The console's Admin > Hosts page in Chromium: the form's invalid adds show the API's
 * problems; a simulated host and a TLS host (its CA, certificate and key chosen as files) are
 * added through the form, listed with their state, the TLS files sealed in the database; the
 * removal of a host with a member's pod on it shows the 409 and is done once the pod is
 * terminated; a runtime host's labels are set from its row and an account's pools from the
 * Accounts page. Opt-in: PODYARD_TEST_BROWSER=1, as console-browser.test.ts.
 */
const BROWSER = process.env.PODYARD_TEST_BROWSER === '1'
if (!BROWSER) console.log('console hosts suite: skipped: set PODYARD_TEST_BROWSER=1')

const FLEET = CPU_FLEET_WITH_LOCAL_HOST

interface HostJson {
  id: string
  state: string
}

describe.runIf(BROWSER)('the console’s Hosts page', { timeout: 180_000 }, () => {
  let platform: TestPlatform
  let browser: Browser
  let page: Page
  let member: string
  let dir: string
  let certs: ReturnType<typeof makeCertificates>
  let pageErrors: string[] = []
  const hostIds = async () =>
    (await json<{ hosts: HostJson[] }>(await platform.call('/v2/admin/hosts'))).hosts.map(
      (h) => h.id,
    )

  beforeAll(async () => {
    buildConsole()
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-console-hosts-'))
    certs = makeCertificates(dir)
    platform = await startTestPlatform({}, { fleetYaml: FLEET })
    member = await otherAccountKey(platform, 'console-hosts@example.com')
    ;({ browser, page, pageErrors } = await signedInConsole(platform.url, TEST_ADMIN_KEY, {
      width: 1280,
      height: 900,
    }))
  }, 150_000)

  afterAll(async () => {
    await browser?.close()
    await platform?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const axe = (where: string) => seriousViolations(page, where)
  const form = () => page.getByRole('form', { name: 'Add a host' })
  const rowOf = (hostId: string) => page.getByRole('row').filter({ hasText: hostId })

  it('shows what the API finds wrong in an add, and adds nothing', async () => {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Hosts', exact: true })
      .click()
    await page.getByRole('heading', { name: 'Hosts', level: 1 }).waitFor()
    await rowOf('file-cpu-1').waitFor()
    const failures = await axe('/admin/hosts')

    await form().getByLabel('Host ID').fill('ssh-node-9')
    await form().getByLabel('Data center').fill('EU-SE-1')
    await form().getByLabel('vCPUs').fill('4')
    await form().getByLabel('Memory (GB)').fill('16')
    await form().getByLabel('CPU flavors').fill('cpu3c')
    await form().getByLabel('Engine', { exact: true }).selectOption('ssh')
    await form().getByLabel('Engine URL').fill('ssh://podyard@127.0.0.1')
    await form().getByRole('button', { name: 'Add host' }).click()
    const alertText = () => form().getByRole('alert').textContent({ timeout: 10_000 })
    await expect.poll(alertText).toContain('docker.sshKey: is required for ssh://')
    await expect.poll(alertText).toContain('docker.knownHosts: is required for ssh://')
    failures.push(...(await axe('/admin/hosts (invalid add)')))
    await screenshot(page, 'hosts-invalid-add')

    await form().getByLabel('Data center').fill('NOWHERE-1')
    await form().getByLabel('Engine', { exact: true }).selectOption('simulated')
    await form().getByRole('button', { name: 'Add host' }).click()
    await expect.poll(alertText).toContain('NOWHERE-1')
    expect(await hostIds()).not.toContain('ssh-node-9')
    expect(failures).toEqual([])
  })

  it('adds a simulated host and a TLS host whose files are sealed; lists their state', async () => {
    await form().getByLabel('Host ID').fill('sim-node-1')
    await form().getByLabel('Data center').fill('EU-SE-1')
    await form().getByRole('button', { name: 'Add host' }).click()
    await rowOf('sim-node-1').waitFor()
    const simRow = rowOf('sim-node-1')
    await simRow.getByText('UP', { exact: true }).waitFor({ timeout: 20_000 })

    await form().getByLabel('Host ID').fill('tls-node-1')
    await form().getByLabel('vCPUs').fill('2')
    await form().getByLabel('Memory (GB)').fill('4')
    await form().getByLabel('Engine', { exact: true }).selectOption('tls')
    await form().getByLabel('Engine URL').fill('tcp://127.0.0.1:1')
    await form().getByLabel('TLS CA certificate').setInputFiles(certs.files.ca)
    await form().getByLabel('TLS client certificate').setInputFiles(certs.files.cert)
    await form().getByLabel('TLS client key').setInputFiles(certs.files.key)
    await form().getByRole('button', { name: 'Add host' }).click()
    // The row, or the problem the form shows instead.
    await expect
      .poll(async () =>
        (await rowOf('tls-node-1').count()) > 0
          ? 'added'
          : await form()
              .getByRole('alert')
              .textContent({ timeout: 500 })
              .catch(() => 'not yet'),
      )
      .toBe('added')
    expect(await form().getByLabel('Host ID').inputValue()).toBe('')

    const row = (
      await platform.store.db
        .selectFrom('hosts')
        .select('declaration')
        .where('id', '=', 'tls-node-1')
        .executeTakeFirstOrThrow()
    ).declaration
    expect(row).not.toContain('-----BEGIN')
    expect(row).toContain('"key":{"sealed":"v1:')
    // Its engine does not answer there: DOWN, with the reason on the page.
    const tlsRow = rowOf('tls-node-1')
    await tlsRow.getByText('DOWN', { exact: true }).waitFor({ timeout: 30_000 })
    expect(await page.content()).not.toContain('-----BEGIN')
    await screenshot(page, 'hosts-added')
    expect(await axe('/admin/hosts (added)')).toEqual([])
  })

  it("sets a runtime host's labels, and an account's pools on the Accounts page", async () => {
    const simRow = rowOf('sim-node-1')
    const labels = simRow.getByRole('form', { name: 'Labels of sim-node-1' })
    await labels.getByLabel('Labels').fill('pool=team-x, ib=true')
    await labels.getByRole('button', { name: 'Save labels sim-node-1' }).click()
    const labelsOf = async () =>
      (
        await json<{ labels: Record<string, string> }>(
          await platform.call('/v2/admin/hosts/sim-node-1'),
        )
      ).labels
    await expect.poll(labelsOf).toEqual({ ib: 'true', pool: 'team-x' })
    // Left out of the line: removed.
    await labels.getByLabel('Labels').fill('pool=team-x')
    await labels.getByRole('button', { name: 'Save labels sim-node-1' }).click()
    await expect.poll(labelsOf).toEqual({ pool: 'team-x' })
    expect(await axe('/admin/hosts (labels)')).toEqual([])

    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Accounts', exact: true })
      .click()
    await page.getByRole('button', { name: 'Credits of console-hosts@example.com' }).click()
    const pools = page.getByRole('form', { name: 'Set pools' })
    await pools.getByLabel('Pools').fill('team-x, team-y')
    await pools.getByRole('button', { name: 'Set pools' }).click()
    await page.getByText('Bound to team-x, team-y').waitFor()
    const memberId = (
      await json<{ id: string }>(await platform.call('/v2/account', { key: member }))
    ).id
    const bound = await json<{ pools: string[] }>(
      await platform.call(`/v2/admin/accounts/${memberId}/pools`),
    )
    expect(bound.pools).toEqual(['team-x', 'team-y'])
    await screenshot(page, 'account-pools')
    expect(await axe('/admin/accounts (pools)')).toEqual([])
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Hosts', exact: true })
      .click()
    await rowOf('sim-node-1').waitFor()
  })

  it('shows the 409 of a removal while a pod is on the host, and removes it once it is gone', async () => {
    const pod = await json<{ id: string }>(
      await platform.call('/v2/pods', {
        method: 'POST',
        key: member,
        json: {
          name: 'on-sim-node-1',
          image: 'x',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          dataCenterIds: ['EU-SE-1'],
        },
      }),
      201,
    )
    const simRow = rowOf('sim-node-1')
    await simRow.getByRole('button', { name: 'Remove sim-node-1' }).click()
    await simRow.getByRole('button', { name: 'Yes, remove sim-node-1' }).click()
    await page
      .getByRole('alert')
      .filter({ hasText: `host sim-node-1 still has pod ${pod.id}` })
      .waitFor()
    expect(await hostIds()).toContain('sim-node-1')
    await screenshot(page, 'hosts-remove-refused')

    expect(
      (await platform.call(`/v2/pods/${pod.id}`, { method: 'DELETE', key: member })).status,
    ).toBeLessThan(300)
    await simRow.getByRole('button', { name: 'Remove sim-node-1' }).click()
    await simRow.getByRole('button', { name: 'Yes, remove sim-node-1' }).click()
    await rowOf('sim-node-1').waitFor({ state: 'detached' })
    const tlsRow = rowOf('tls-node-1')
    await tlsRow.getByRole('button', { name: 'Remove tls-node-1' }).click()
    await tlsRow.getByRole('button', { name: 'Yes, remove tls-node-1' }).click()
    await rowOf('tls-node-1').waitFor({ state: 'detached' })
    expect(await hostIds()).not.toContain('sim-node-1')
    expect(await hostIds()).not.toContain('tls-node-1')
    // A host of the configured fleet has no Remove.
    const fileRow = rowOf('file-cpu-1')
    expect(await fileRow.getByRole('button', { name: /^Remove/ }).count()).toBe(0)
    expect(pageErrors).toEqual([])
  })
})
