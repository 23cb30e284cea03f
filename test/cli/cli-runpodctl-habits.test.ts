import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { runCli, settingsFreeEnv } from '../support/cli.js'
import { json } from '../support/http.js'
import { otherAccountKey, startTestPlatform, type TestPlatform } from '../support/platform.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON read back from the CLI
type Json = Record<string, any>

/**
 * A runpodctl user at home (docs/cli.md, "Coming from runpodctl"): its nouns and verbs,
 * `--output json|yaml|table`, and its key (RUNPOD_API_KEY, ~/.runpod/config.toml) after
 * podyard's own. Real bin, a real server, as a member account (not the admin).
 */
describe("podyard CLI with runpodctl's habits", () => {
  let platform: TestPlatform
  let home: string
  let memberKey: string
  let podId: string
  /** No podyard settings from the environment, and a HOME of the suite's own. */
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    runCli(args, {
      ...settingsFreeEnv(home),
      ...env,
    })
  const auth = () => ['--url', platform.url, '--api-key', memberKey]
  /** A pod without what changes by the second (status, uptime): what two reads agree on. */
  const stable = (pod: Json) => ({ id: pod.id, name: pod.name, keys: Object.keys(pod).sort() })
  const jsonOf = async (args: string[]) => {
    const result = await cli([...args, ...auth(), '--json'])
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0)
    return JSON.parse(result.stdout) as Json
  }

  beforeAll(async () => {
    platform = await startTestPlatform({ sandbox: 'none' })
    home = mkdtempSync(path.join(tmpdir(), 'podyard-cli-runpodctl-'))
    memberKey = await otherAccountKey(platform, 'runpodctl-habits@example.com')
    podId = (
      await json<{ id: string }>(
        await platform.call('/v2/pods', {
          method: 'POST',
          headers: { authorization: `Bearer ${memberKey}` },
          json: { name: 'habits', image: 'busybox', cpu: { id: 'cpu3c', vcpuCount: 2 } },
        }),
        201,
      )
    ).id
  })
  afterAll(async () => {
    await platform?.close()
    rmSync(home, { recursive: true, force: true })
  })

  // Some thirty runs of the CLI: more than the default 30 s on a loaded machine.
  it("answers runpodctl's nouns as podyard's commands", { timeout: 120_000 }, async () => {
    const pods = (await jsonOf(['pods', 'list'])).map(stable)
    expect(pods.map((p: Json) => p.id)).toEqual([podId])
    for (const args of [
      ['pod', 'list'],
      ['get', 'pod'],
    ]) {
      expect((await jsonOf(args)).map(stable), args.join(' ')).toEqual(pods)
    }
    expect(await jsonOf(['get', 'pod', podId])).toMatchObject({ id: podId, name: 'habits' })
    expect(await jsonOf(['pod', 'get', podId])).toMatchObject({ id: podId })

    const endpoints = await jsonOf(['endpoints', 'list'])
    for (const noun of ['serverless', 'sls'])
      expect(await jsonOf([noun, 'list'])).toEqual(endpoints)
    const templates = await jsonOf(['templates', 'list'])
    for (const noun of ['template', 'tpl']) expect(await jsonOf([noun, 'list'])).toEqual(templates)
    const volumes = await jsonOf(['volumes', 'list'])
    for (const noun of ['volume', 'network-volume', 'nv']) {
      expect(await jsonOf([noun, 'list'])).toEqual(volumes)
    }
    const registries = await jsonOf(['registries', 'list'])
    expect(await jsonOf(['registry', 'list'])).toEqual(registries)

    const gpus = await jsonOf(['catalog', 'gpus'])
    expect(gpus.length).toBeGreaterThan(0)
    for (const noun of ['gpu', 'gpus']) expect(await jsonOf([noun, 'list'])).toEqual(gpus)
    expect(await jsonOf(['datacenter', 'list'])).toEqual(await jsonOf(['catalog', 'datacenters']))
    expect(await jsonOf(['user'])).toMatchObject({ role: expect.any(String) })
    expect((await jsonOf(['me'])).id).toBe((await jsonOf(['account'])).id)

    const version = await cli(['version'])
    expect(version.code).toBe(0)
    expect(version.stdout).toBe((await cli(['--version'])).stdout)
  })

  it(
    "runs runpodctl's verb-first pod commands: create, stop, start, remove",
    { timeout: 120_000 },
    async () => {
      const created = await cli([
        'create',
        'pod',
        '--name',
        'verb-first',
        '--image',
        'busybox',
        '--cpu',
        'cpu3c',
        '--args',
        'sleep 600',
        '--quiet',
        ...auth(),
      ])
      expect(created.code, created.stderr).toBe(0)
      const id = created.stdout.trim()
      expect(await jsonOf(['get', 'pod', id])).toMatchObject({ name: 'verb-first' })
      expect((await cli(['stop', 'pod', id, ...auth()])).code).toBe(0)
      expect(await jsonOf(['pods', 'get', id])).toMatchObject({ status: 'EXITED' })
      expect((await cli(['start', 'pod', id, ...auth()])).code).toBe(0)
      expect((await jsonOf(['pods', 'get', id])).status).not.toBe('EXITED')
      const removed = await cli(['remove', 'pod', id, ...auth()])
      expect(removed.code, removed.stderr).toBe(0)
      expect(removed.stdout).toBe(`Terminated ${id}.\n`)
      expect(await jsonOf(['pods', 'get', id])).toMatchObject({ status: 'TERMINATED' })
      // runpodctl's `pod delete` / `pod rm` are podyard's terminate.
      const again = await cli(['pod', 'rm', id, ...auth()])
      expect(again.stdout).toBe(`Terminated ${id}.\n`)
    },
  )

  it('prints --output json (as --json), yaml and table', async () => {
    const asJson = await cli(['pods', 'get', podId, ...auth(), '--output', 'json'])
    expect(asJson.code, asJson.stderr).toBe(0)
    expect(stable(JSON.parse(asJson.stdout))).toEqual(stable(await jsonOf(['pods', 'get', podId])))
    const asYaml = await cli(['pods', 'get', podId, ...auth(), '-o', 'yaml'])
    expect(asYaml.code, asYaml.stderr).toBe(0)
    expect(asYaml.stdout).toMatch(new RegExp(`^id: ${podId}$`, 'm'))
    // The same document: YAML's types (numbers, null, nesting) read back as JSON's.
    expect(stable(parseYaml(asYaml.stdout))).toEqual(stable(JSON.parse(asJson.stdout)))
    expect(parseYaml(asYaml.stdout)).toMatchObject({ id: podId, name: 'habits' })
    const list = await cli(['pod', 'list', ...auth(), '--output=yaml'])
    expect((parseYaml(list.stdout) as Json[]).map(stable)).toEqual(
      (await jsonOf(['pods', 'list'])).map(stable),
    )
    const table = await cli(['pods', 'list', ...auth(), '-o', 'table'])
    expect(table.stdout).toMatch(/^ID\s+NAME\s+STATUS/)
    expect(table.stdout).toMatch(new RegExp(`^${podId}\\s+habits\\s`, 'm'))

    // Errors follow the format on stderr; --json with another format is a usage error.
    const missing = await cli(['pods', 'get', 'nope00000000000', ...auth(), '-o', 'yaml'])
    expect(missing.code).toBe(4)
    expect(parseYaml(missing.stderr)).toMatchObject({ error: { status: 404, exitCode: 4 } })
    const both = await cli(['pods', 'list', ...auth(), '--json', '--output', 'table'])
    expect(both.code).toBe(2)
    expect(both.stderr).toContain('--json is --output json')
  })

  it("takes runpodctl's key and URL after podyard's own settings", async () => {
    const noUrl = ['account', '--json']
    // RUNPOD_API_KEY with RUNPOD_API_URL (runpodctl's REST URL, .../v1).
    const fromEnv = await cli(noUrl, {
      RUNPOD_API_KEY: memberKey,
      RUNPOD_API_URL: `${platform.url}/v1`,
    })
    expect(fromEnv.code, fromEnv.stderr).toBe(0)
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ role: expect.any(String) })

    // runpodctl's config file, keys as viper writes them (lower case).
    mkdirSync(path.join(home, '.runpod'), { recursive: true })
    writeFileSync(
      path.join(home, '.runpod', 'config.toml'),
      `apikey = "${memberKey}"\napiurl = "${platform.url}/graphql"\n`,
    )
    const fromFile = await cli(noUrl)
    expect(fromFile.code, fromFile.stderr).toBe(0)
    expect(JSON.parse(fromFile.stdout).id).toBe(JSON.parse(fromEnv.stdout).id)

    // podyard's variable wins over runpodctl's, which wins over runpodctl's file; a refused key
    // is named by where it came from.
    const wrong = 'pyd_wrong-key-0123456789'
    const podyardWins = await cli(noUrl, { PODYARD_API_KEY: wrong, RUNPOD_API_KEY: memberKey })
    expect(podyardWins.code).toBe(3)
    expect(JSON.parse(podyardWins.stderr).error.message).toContain('$PODYARD_API_KEY')
    const envWins = await cli(noUrl, { RUNPOD_API_KEY: wrong })
    expect(envWins.code).toBe(3)
    expect(JSON.parse(envWins.stderr).error.message).toContain('$RUNPOD_API_KEY')
    // A profile wins over both.
    writeFileSync(
      path.join(home, 'profiles.json'),
      JSON.stringify({ profiles: { default: { url: platform.url, apiKey: wrong } } }),
    )
    const profileWins = await cli(noUrl, { RUNPOD_API_KEY: memberKey })
    expect(profileWins.code).toBe(3)
    expect(JSON.parse(profileWins.stderr).error.message).toContain('profile "default"')
    rmSync(path.join(home, 'profiles.json'))

    // runpodctl's default URL is RunPod's own: it is not taken for a podyard server.
    writeFileSync(
      path.join(home, '.runpod', 'config.toml'),
      `apikey = "${wrong}"\napiurl = "https://api.runpod.io/graphql"\n`,
    )
    const cloud = await cli(['account', '--json'], { PODYARD_URL: platform.url })
    expect(cloud.code).toBe(3)
    expect(JSON.parse(cloud.stderr).error.message).toContain(
      `runpodctl's ${path.join(home, '.runpod', 'config.toml')}`,
    )
    rmSync(path.join(home, '.runpod'), { recursive: true })
  })
})
