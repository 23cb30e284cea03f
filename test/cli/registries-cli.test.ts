import { spawn } from 'node:child_process'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { passwordFromStdin } from '../../src/cli/registries-commands.js'
import { repoRoot, runCli, type CliResult } from '../support/cli.js'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'

const PASSWORD = 'cli-Passw0rd-58e2'

/** Like runCli, with text on standard input. */
function runCliWithStdin(args: string[], stdin: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'bin', 'podyard.js'), ...args], {
      cwd: repoRoot,
      env: { ...process.env, PODYARD_ADMIN_KEY: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(stdin)
  })
}

describe('passwordFromStdin', () => {
  it('drops one trailing line break, keeps everything else', () => {
    expect(passwordFromStdin('secret\n')).toBe('secret')
    expect(passwordFromStdin('secret\r\n')).toBe('secret')
    expect(passwordFromStdin(' secret \n\n')).toBe(' secret \n')
    expect(passwordFromStdin('secret')).toBe('secret')
  })
})

describe('podyard registries', () => {
  let platform: TestPlatform
  const flags = () => ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
  const registries = (...args: string[]) => runCli(['registries', ...args, ...flags()])

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('creates from stdin, lists, gets and deletes, never printing the password', async () => {
    const created = await runCliWithStdin(
      [
        'registries',
        'create',
        '--name',
        'hub',
        '--username',
        'ada',
        '--password-stdin',
        '--json',
        ...flags(),
      ],
      `${PASSWORD}\n`,
    )
    expect(created.code, created.stderr).toBe(0)
    expect(created.stderr).toBe('')
    const registry = JSON.parse(created.stdout) as { id: string; name: string }
    expect(registry).toEqual({ id: expect.stringMatching(/^cl[a-z0-9]{23}$/), name: 'hub' })

    const table = await registries('list')
    expect(table.stdout).toMatch(/^ID\s+NAME\n/)
    expect(table.stdout).toMatch(new RegExp(`${registry.id}\\s+hub`))
    expect(JSON.parse((await registries('get', registry.id, '--json')).stdout)).toEqual(registry)

    const deleted = await registries('delete', registry.id)
    expect(deleted.code, deleted.stderr).toBe(0)
    expect(deleted.stdout).toBe(`Deleted registry ${registry.id}.\n`)
    const missing = await registries('get', registry.id)
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toMatch(/404.*not found/)

    for (const out of [created, table, deleted])
      expect(out.stdout + out.stderr).not.toContain(PASSWORD)
  })

  it('accepts --password with a warning on stderr, and refuses no password or both', async () => {
    const withFlag = await registries(
      'create',
      '--name',
      'flag',
      '--username',
      'u',
      '--password',
      PASSWORD,
    )
    expect(withFlag.code, withFlag.stderr).toBe(0)
    expect(withFlag.stdout).toMatch(/^Created registry cl[a-z0-9]{23} \(flag\)\.\n$/)
    expect(withFlag.stderr).toMatch(/warning: --password is visible .* prefer --password-stdin/)

    const none = await registries('create', '--name', 'none', '--username', 'u')
    expect(none.code).not.toBe(0)
    expect(none.stderr).toMatch(/--password-stdin/)

    const both = await runCliWithStdin(
      [
        'registries',
        'create',
        '--name',
        'both',
        '--username',
        'u',
        '--password',
        'x',
        '--password-stdin',
        ...flags(),
      ],
      'y\n',
    )
    expect(both.code).not.toBe(0)
    expect(both.stderr).toMatch(/not both/)
  })
})
