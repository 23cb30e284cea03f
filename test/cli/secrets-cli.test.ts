import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/cli.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

const FROM_STDIN = 'stdin-Value-91c3'
const FROM_FILE = 'file-Value-27ab'
const ON_COMMAND_LINE = 'argv-Value-5d10'

interface SecretJson {
  id: string
  name: string
  description: string | null
}

/** `podyard secrets` as a member account: values go in by stdin, file or flag and never come out. */
describe('podyard secrets', () => {
  let platform: TestPlatform
  let member: string
  let other: string
  let dir: string
  const flags = (key: string) => ['--url', platform.url, '--api-key', key]
  const secrets = (args: string[], options: { key?: string; stdin?: string } = {}) =>
    runCli(['secrets', ...args, ...flags(options.key ?? member)], {}, { stdin: options.stdin })

  beforeAll(async () => {
    platform = await startTestPlatform()
    member = await otherAccountKey(platform, 'secrets-cli@example.com')
    other = await otherAccountKey(platform, 'secrets-cli-other@example.com')
    dir = mkdtempSync(path.join(tmpdir(), 'podyard-secrets-cli-'))
  })
  afterAll(async () => {
    await platform.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('creates from stdin, a file or --value, lists them, and never prints a value', async () => {
    const fromStdin = await secrets(
      ['create', '--name', 'HF_TOKEN', '--description', 'hub', '--value-stdin'],
      { stdin: `${FROM_STDIN}\n` },
    )
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(fromStdin.stdout).toMatch(/Created secret \S+ \(HF_TOKEN\); .*RUNPOD_SECRET_HF_TOKEN/)

    const file = path.join(dir, 'value.txt')
    writeFileSync(file, `${FROM_FILE}\n`)
    const fromFile = await secrets(['create', '--name', 'DB_PASS', '--value-file', file, '--json'])
    expect(fromFile.code, fromFile.stderr).toBe(0)
    const created = JSON.parse(fromFile.stdout) as SecretJson
    expect(created).toMatchObject({ name: 'DB_PASS', description: null })

    const fromArgv = await secrets(['create', '--name', 'PLAIN', '--value', ON_COMMAND_LINE, '-q'])
    expect(fromArgv.code, fromArgv.stderr).toBe(0)
    expect(fromArgv.stderr).toMatch(/--value is visible .* shell history/)
    expect(fromArgv.stdout.trim()).toMatch(/^\S+$/)

    const listed = await secrets(['list'])
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+DESCRIPTION\s+CREATED/)
    for (const name of ['HF_TOKEN', 'DB_PASS', 'PLAIN']) expect(listed.stdout).toContain(name)
    const asJson = await secrets(['list', '--json'])
    const list = JSON.parse(asJson.stdout) as SecretJson[]
    expect(list.map((s) => s.name).sort()).toEqual(['DB_PASS', 'HF_TOKEN', 'PLAIN'])
    for (const output of [fromStdin, fromFile, fromArgv, listed, asJson]) {
      for (const value of [FROM_STDIN, FROM_FILE, ON_COMMAND_LINE]) {
        expect(output.stdout + output.stderr).not.toContain(value)
      }
    }
    expect(Object.keys(list[0]!)).not.toContain('value')
  })

  it('refuses a create without a value, or with two, and an empty one', async () => {
    const none = await secrets(['create', '--name', 'NONE'])
    expect(none.code).not.toBe(0)
    expect(none.stderr).toMatch(/give the value with --value-stdin/)
    const two = await secrets(['create', '--name', 'TWO', '--value', 'a', '--value-stdin'], {
      stdin: 'b',
    })
    expect(two.code).not.toBe(0)
    expect(two.stderr).toMatch(/give one of --value-stdin, --value-file or --value/)
    const empty = await secrets(['create', '--name', 'EMPTY', '--value-stdin'], { stdin: '\n' })
    expect(empty.code).not.toBe(0)
    expect(empty.stderr).toMatch(/the value is empty/)
    const duplicate = await secrets(['create', '--name', 'PLAIN', '--value-stdin'], { stdin: 'x' })
    expect(duplicate.code).not.toBe(0)
    expect(duplicate.stderr).toMatch(/PLAIN/)
  })

  it("deletes by name or id (runpodctl's rm too), and never another account's", async () => {
    const list = JSON.parse((await secrets(['list', '--json'])).stdout) as SecretJson[]
    const dbPass = list.find((s) => s.name === 'DB_PASS')!

    const notTheirs = await secrets(['delete', dbPass.id], { key: other })
    expect(notTheirs.code).not.toBe(0)
    expect(notTheirs.stderr).toMatch(/no secret/)
    expect((await secrets(['list', '--json'], { key: other })).stdout.trim()).toBe('[]')

    const byName = await secrets(['delete', 'HF_TOKEN'])
    expect(byName.code, byName.stderr).toBe(0)
    expect(byName.stdout).toMatch(/Deleted secret \S+ \(HF_TOKEN\)/)
    const byId = await runCli(['secret', 'rm', dbPass.id, ...flags(member)])
    expect(byId.code, byId.stderr).toBe(0)
    const left = JSON.parse((await secrets(['list', '--json'])).stdout) as SecretJson[]
    expect(left.map((s) => s.name)).toEqual(['PLAIN'])
  })
})
