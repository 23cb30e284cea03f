import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'

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
