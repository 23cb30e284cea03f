import { readFileSync } from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'

/** The budget for what the first page loads (index.html, its script, styles, preloads). */
export const FIRST_PAGE_BUDGET_KB = 300

/**
 * What a browser fetches before the first paint: the page, and every script, module preload
 * and stylesheet it names. Lazily loaded chunks (the billing charts) are not part of it.
 */
export function checkBundleBudget(
  outDir: string,
  indexHtml: string,
): { ok: boolean; gzipBytes: number; limitKb: number; files: string[] } {
  const referenced = [...indexHtml.matchAll(/(?:src|href)="\/([^"]+\.(?:js|css))"/g)].map(
    (match) => match[1]!,
  )
  const files = ['index.html', ...new Set(referenced)]
  const gzipBytes = files
    .map((file) => gzipSync(readFileSync(path.join(outDir, file))).length)
    .reduce((a, b) => a + b, 0)
  return {
    ok: gzipBytes <= FIRST_PAGE_BUDGET_KB * 1024,
    gzipBytes,
    limitKb: FIRST_PAGE_BUDGET_KB,
    files,
  }
}
