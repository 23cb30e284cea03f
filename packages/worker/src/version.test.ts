import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { SDK_VERSION } from './version.js'

describe('SDK_VERSION', () => {
  it("is the package's version", () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string
    }
    expect(SDK_VERSION).toBe(pkg.version)
  })
})
