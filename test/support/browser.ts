import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { repoRoot } from './cli.js'

/** Debian's Chromium; `.ci/run` installs it. PODYARD_TEST_CHROMIUM names another binary. */
export const CHROMIUM = process.env.PODYARD_TEST_CHROMIUM ?? '/usr/bin/chromium'

/** A host name that is not loopback, mapped to 127.0.0.1 inside Chromium only. */
export const CONSOLE_HOST = 'podyard-console.test'

/** Screenshots of the browser suite (ignored by git; docs/console.md embeds a few). */
export const SCREENSHOT_DIR = path.resolve(
  import.meta.dirname,
  '..',
  '..',
  'test-results',
  'console',
)

/**
 * Headless Chromium with no network of its own: no background requests, no component updates,
 * and `CONSOLE_HOST` resolving to this machine, so the console can be opened by a name that is
 * neither localhost nor an IP address. Playwright gives it a fresh profile directory.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--host-resolver-rules=MAP ${CONSOLE_HOST} 127.0.0.1`,
    ],
  })
}

/** A run starts with no screenshot of an earlier one. */
export function clearScreenshots(): void {
  rmSync(SCREENSHOT_DIR, { recursive: true, force: true })
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true })
}

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
)

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: Array<{ target: string[]; failureSummary?: string }>
}

/**
 * axe-core's WCAG 2 A and AA rules on the page as it is now. The script is evaluated through
 * the DevTools protocol, which the page's CSP does not govern (a <script> tag would be refused,
 * as it should be).
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(`${axeSource}\n;undefined`)
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: {
          run: (context: unknown, options: unknown) => Promise<{ violations: AxeViolation[] }>
        }
      }
    ).axe
    const result = await axe.run(document, {
      runOnly: {
        type: 'tag',
        values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'],
      },
    })
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes
        .slice(0, 3)
        .map((n) => ({ target: n.target, failureSummary: n.failureSummary })),
    }))
  })
}

/**
 * Builds the console from this checkout's sources, so that the console under test is theirs and
 * not whatever dist/console holds; fails at once without Chromium.
 */
export function buildConsole(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium`)
  execFileSync(
    process.execPath,
    [
      path.join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
      'console/scripts/build-console.ts',
    ],
    { cwd: repoRoot, stdio: 'inherit' },
  )
}

/** A console page in Chromium, signed in; the page's uncaught errors are collected. */
export interface ConsoleSession {
  browser: Browser
  page: Page
  pageErrors: string[]
}

/** Chromium on the console at `url`, signed in with `key`, on its dashboard. */
export async function signedInConsole(
  url: string,
  key: string,
  viewport: { width: number; height: number },
): Promise<ConsoleSession> {
  const browser = await launchChromium()
  const page = await (await browser.newContext({ viewport })).newPage()
  const pageErrors: string[] = []
  page.on('pageerror', (error) => pageErrors.push(error.message))
  await page.goto(`${url}/`)
  await page.getByLabel('API key').fill(key)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor()
  return { browser, page, pageErrors }
}

/** axe-core's serious and critical violations on the page, one line each, prefixed by `where`. */
export async function seriousViolations(page: Page, where: string): Promise<string[]> {
  return (await axeViolations(page))
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${where}: ${v.id} (${v.impact}) ${v.help}`)
}
