import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'

/** `podyard accounts quota` on the store (docs/cli.md, "Store commands"). */
describe('podyard accounts quota', () => {
  it('shows no quota by default, sets and removes limits', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-quota-cli-'))
    const withDir = (...args: string[]) => [...args, '--data-dir', dataDir]
    try {
      const created = await runCli(
        withDir('accounts', 'create', '--email', 'team@example.com', '--json', '--init'),
      )
      expect(created.code, created.stderr).toBe(0)
      const shown = await runCli(withDir('accounts', 'quota', 'team@example.com'))
      expect(shown.code, shown.stderr).toBe(0)
      expect(shown.stdout).toMatch(/gpus\s+none\s+0/)
      const set = await runCli(
        withDir(
          'accounts',
          'quota',
          'team@example.com',
          '--gpus',
          '4',
          '--volume-gb',
          '500',
          '--json',
        ),
      )
      expect(set.code, set.stderr).toBe(0)
      expect(JSON.parse(set.stdout).quotas).toEqual({
        gpus: { limit: 4, used: 0 },
        pods: { limit: null, used: 0 },
        workers: { limit: null, used: 0 },
        volumeGb: { limit: 500, used: 0 },
      })
      const removed = await runCli(
        withDir('accounts', 'quota', 'team@example.com', '--gpus', 'none'),
      )
      expect(removed.stdout).toMatch(/gpus\s+none\s+0/)
      expect(removed.stdout).toMatch(/volumeGb\s+500\s+0/)
      const bad = await runCli(withDir('accounts', 'quota', 'team@example.com', '--pods', 'many'))
      expect(bad.code).not.toBe(0)
      expect(bad.stderr).toMatch(/"many" is not a whole number or "none"/)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 60_000)
})
