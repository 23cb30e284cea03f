import type { Browser, BrowserContext, Page } from 'playwright-core'
import { buildConsole, launchChromium } from './browser.js'
import { startTestPlatform, type TestPlatform } from './platform.js'

/**
 * What the web console's browser suites test/console/console-browser*.test.ts share: a real
 * platform serving the console, built from the current sources first, and Chromium with one
 * context (its viewport) for their pages; and signing in on a page.
 */
export interface ConsoleRig {
  platform: TestPlatform
  browser: Browser
  context: BrowserContext
}

export async function startConsoleRig(): Promise<ConsoleRig> {
  buildConsole()
  // `sandbox: none`: the TypeScript worker runs from this checkout, outside any sandbox.
  const platform = await startTestPlatform({ sandbox: 'none' })
  const browser = await launchChromium()
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
  return { platform, browser, context }
}

/** Signs in on the sign-in page `target` shows, with `key`. */
export async function signIn(target: Page, key: string): Promise<void> {
  await target.getByLabel('API key').fill(key)
  await target.getByRole('button', { name: 'Sign in' }).click()
}
