import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot, runCli } from '../support/cli.js'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { until } from '../support/until.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON read back from the CLI
type Json = Record<string, any>

/**
 * The CLI covers the platform: --version, profiles, --json everywhere (errors too),
 * --quiet on creates, GPU names, the commands that were missing. Real bin, real server.
 */
describe('podyard CLI for people and scripts', () => {
  let platform: TestPlatform
  let home: string
  /** A profiles file of the suite's own, and no server settings from the environment. */
  let env: NodeJS.ProcessEnv
  const auth = () => ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
  const cli = (args: string[], options: { stdin?: string; env?: NodeJS.ProcessEnv } = {}) =>
    runCli(args, { ...env, ...options.env }, options.stdin === undefined ? {} : options)
  const json = async (args: string[]) => {
    const result = await cli([...args, ...auth(), '--json'])
    expect(result.code, result.stderr).toBe(0)
    return JSON.parse(result.stdout) as Json
  }

  beforeAll(async () => {
    platform = await startTestPlatform({ sandbox: 'none' })
    home = mkdtempSync(path.join(tmpdir(), 'podyard-cli-home-'))
    env = {
      PODYARD_PROFILES_FILE: path.join(home, 'config', 'podyard', 'profiles.json'),
      PODYARD_URL: '',
      PODYARD_API_KEY: '',
      PODYARD_PROFILE: '',
    }
  })
  afterAll(async () => {
    await platform?.close()
    rmSync(home, { recursive: true, force: true })
  })

  it("prints podyard's version", async () => {
    const { version } = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
      version: string
    }
    for (const flag of ['--version', '-V']) {
      const result = await cli([flag])
      expect(result.code).toBe(0)
      expect(result.stdout).toBe(`${version}\n`)
    }
  })

  it('writes no colour or other terminal escape on a terminal: help, tables, errors', async () => {
    /** `podyard <args>` with a pseudo-terminal as stdout and stderr (util-linux's `script`). */
    const onTerminal = (args: string[], noColor: string) =>
      new Promise<string>((resolve, reject) => {
        const bin = path.join(repoRoot, 'bin', 'podyard.js')
        const command = [process.execPath, bin, ...args].map((a) => `'${a}'`).join(' ')
        execFile(
          'script',
          ['-qec', command, '/dev/null'],
          { cwd: repoRoot, env: { ...process.env, ...env, TERM: 'xterm', NO_COLOR: noColor } },
          // A refusal exits non-zero: its output is what is looked at.
          (error, stdout) => (stdout ? resolve(stdout) : reject(error ?? new Error('no output'))),
        )
      })
    for (const noColor of ['', '1']) {
      const outputs = [
        await onTerminal(['--help'], noColor),
        await onTerminal(['pods', 'list', ...auth()], noColor),
        await onTerminal(['catalog', 'gpus', ...auth()], noColor),
        await onTerminal(['pods', 'get', 'no-such-pod', ...auth()], noColor),
      ]
      expect(outputs[0]).toMatch(/Usage: podyard/)
      expect(outputs[2]).toMatch(/L4/)
      expect(outputs[3]).toMatch(/no-such-pod/)
      // eslint-disable-next-line no-control-regex
      for (const output of outputs) expect(output).not.toMatch(/\u001b/)
    }
  })

  it('saves a URL and key per profile (mode 0600); flags and the environment override it', async () => {
    const file = env.PODYARD_PROFILES_FILE!
    const saved = await cli(
      ['config', 'set', '--profile', 'local', '--url', `${platform.url}/`, '--api-key-stdin'],
      { stdin: `${TEST_ADMIN_KEY}\n` },
    )
    expect(saved.code, saved.stderr).toBe(0)
    expect(saved.stdout).toBe(`Saved profile local in ${file} (readable by you only).\n`)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700)
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      profiles: { local: { url: platform.url, apiKey: TEST_ADMIN_KEY } },
    })

    const shown = await cli(['config', 'show', '--profile', 'local'])
    expect(shown.stdout).toContain(`url      ${platform.url}`)
    expect(shown.stdout).not.toContain(TEST_ADMIN_KEY)
    const listed = await cli(['config', 'list', '--json'])
    expect(JSON.parse(listed.stdout)).toEqual([
      { profile: 'local', url: platform.url, apiKey: `${TEST_ADMIN_KEY.slice(0, 9)}…` },
    ])

    // The profile alone reaches the server; --profile or PODYARD_PROFILE names it.
    const viaFlag = await cli(['account', '--profile', 'local', '--json'])
    expect(viaFlag.code, viaFlag.stderr).toBe(0)
    expect(JSON.parse(viaFlag.stdout)).toMatchObject({ role: 'admin' })
    const viaEnv = await cli(['account', '--json'], { env: { PODYARD_PROFILE: 'local' } })
    expect(viaEnv.code, viaEnv.stderr).toBe(0)

    // The environment overrides the profile, and a flag overrides the environment.
    const badKey = { PODYARD_PROFILE: 'local', PODYARD_API_KEY: 'pyd_not-a-key-0123456789' }
    const envWins = await cli(['account'], { env: badKey })
    expect(envWins.code).toBe(3)
    expect(envWins.stderr).toMatch(/401/)
    const flagWins = await cli(['account', '--api-key', TEST_ADMIN_KEY], { env: badKey })
    expect(flagWins.code, flagWins.stderr).toBe(0)

    const unknown = await cli(['account', '--profile', 'staging'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain(`no profile "staging" in ${file}`)

    // A key given as a flag works too; set keeps the fields it is not given.
    expect((await cli(['config', 'set', '--profile', 'local', '--api-key', 'pyd_x'])).code).toBe(0)
    expect(JSON.parse(readFileSync(file, 'utf8')).profiles.local).toEqual({
      url: platform.url,
      apiKey: 'pyd_x',
    })
    expect((await cli(['config', 'delete', 'local'])).stdout).toBe('Deleted profile local.\n')
    expect((await cli(['config', 'set', '--profile', 'a b', '--url', 'http://x'])).stderr).toMatch(
      /"a b" is not a profile name/,
    )
  })

  it('reports errors as JSON on stderr with --json: refusals, unknown commands and options', async () => {
    const refused = await cli(['pods', 'get', 'nope00000000000', ...auth(), '--json'])
    expect(refused.code).toBe(4)
    expect(refused.stdout).toBe('')
    expect(JSON.parse(refused.stderr)).toEqual({
      error: {
        message: expect.stringContaining('pod nope00000000000 not found'),
        exitCode: 4,
        status: 404,
        title: 'Not Found',
        detail: expect.stringContaining('pod nope00000000000 not found'),
      },
    })
    const unreachable = await cli(['pods', 'list', '--url', 'http://127.0.0.1:1', '--json'])
    expect(JSON.parse(unreachable.stderr).error.message).toMatch(/^cannot reach podyard at/)
    const typo = await cli(['pods', 'lst', '--json'])
    expect(typo.code).toBe(2)
    expect(JSON.parse(typo.stderr).error.message).toMatch(/^unknown command 'lst'/)
    const option = await cli(['pods', 'list', '--bogus', '--json'])
    expect(JSON.parse(option.stderr)).toEqual({
      error: { message: "unknown option '--bogus'", exitCode: 2 },
    })
    // An argument refused by a command itself (not by commander's parsing) is printed too.
    const badDev = await cli(['dev', path.join(home, 'handler.rb')])
    expect(badDev.code).toBe(2)
    expect(badDev.stderr).toBe(`podyard: ${path.join(home, 'handler.rb')}: no such file\n`)
    const badExpiry = await cli(['keys', 'create', '--expires', 'someday', '--data-dir', home])
    expect(badExpiry.stderr).toMatch(/^podyard: .*someday/)
    // Without --json, the same as text.
    const text = await cli(['pods', 'get', 'nope00000000000', ...auth()])
    expect(text.stderr).toMatch(/^podyard: 404 Not Found: pod nope00000000000 not found/)
  })

  it('accepts GPU names such as "RTX 4090", suggests the closest for a typo, and prints only the id with --quiet', async () => {
    const quiet = await cli([
      'pods',
      'create',
      '--name',
      'named-gpu',
      '--image',
      'python',
      '--gpu',
      'RTX 4090',
      '--quiet',
      ...auth(),
    ])
    expect(quiet.code, quiet.stderr).toBe(0)
    expect(quiet.stdout).toMatch(/^[a-z0-9]{14}\n$/)
    const pod = await json(['pods', 'get', quiet.stdout.trim()])
    expect(pod.gpu).toEqual({ id: 'NVIDIA GeForce RTX 4090', count: 1 })
    await cli(['pods', 'terminate', pod.id, ...auth()])

    const typo = await cli([
      'pods',
      'create',
      '--name',
      'x',
      '--image',
      'y',
      '--gpu',
      'RTX 4900',
      ...auth(),
    ])
    expect(typo.code).toBe(2)
    expect(typo.stderr).toMatch(
      /^podyard: unknown GPU type "RTX 4900"; did you mean: NVIDIA GeForce RTX 4090 \(RTX 4090\)/,
    )
    const cluster = await cli([
      'clusters',
      'create',
      '--name',
      'c',
      '--gpu',
      'h100',
      '--pods',
      '2',
      ...auth(),
    ])
    // The demo fleet has one H100 type: a name that only contains it is suggested, not taken.
    expect(cluster.stderr).toMatch(
      /unknown GPU type "h100"; did you mean: NVIDIA H100 80GB HBM3 \(H100 SXM\)\?/,
    )
  })

  it('says when the COMMUNITY cloud has the capacity SECURE lacks', async () => {
    const args = ['pods', 'create', '--name', 'x', '--image', 'python', '--gpu', 'RTX 3090']
    const refused = await cli([...args, ...auth()])
    expect(refused.code).toBe(5)
    expect(refused.stderr).toMatch(
      /^podyard: 409 Conflict: no host has 1 free NVIDIA GeForce RTX 3090 in the SECURE cloud.*; the COMMUNITY cloud has room for it: pass --cloud COMMUNITY\n$/,
    )
    const created = await cli([...args, '--cloud', 'COMMUNITY', '--quiet', ...auth()])
    expect(created.code, created.stderr).toBe(0)
    await cli(['pods', 'terminate', created.stdout.trim(), ...auth()])
  })

  it('creates pods from a template, on a network volume, on hosts of a CUDA version; updates them', async () => {
    const template = await cli([
      'templates',
      'create',
      '--name',
      'notebook',
      '--image',
      'jupyter:1',
      '--env',
      'FROM=template',
      '--quiet',
      ...auth(),
    ])
    expect(template.stdout).toMatch(/^[a-z0-9]+\n$/)
    const templateId = template.stdout.trim()
    const volume = await json([
      'volumes',
      'create',
      '--name',
      'data',
      '--size',
      '10',
      '--data-center',
      'US-KS-2',
    ])
    const pod = await json([
      'pods',
      'create',
      '--name',
      'from-template',
      '--template',
      templateId,
      '--gpu',
      'RTX 4090',
      '--cuda',
      '12.8',
      '--network-volume',
      volume.id,
      '--network-volume-path',
      '/data',
      '--data-center',
      'US-KS-2',
    ])
    expect(pod).toMatchObject({
      image: 'jupyter:1',
      env: { FROM: 'template' },
      dataCenterId: 'US-KS-2',
      mounts: { network: [{ volumeId: volume.id, path: '/data' }] },
    })
    // No RTX 4090 host has CUDA 11.8: the requirement is honoured, not ignored.
    const oldCuda = await cli([
      'pods',
      'create',
      '--name',
      'old-cuda',
      '--image',
      'x',
      '--gpu',
      'RTX 4090',
      '--cuda',
      '11.8',
      ...auth(),
    ])
    expect(oldCuda.code).toBe(5)
    expect(oldCuda.stderr).toMatch(/409 Conflict: .*CUDA/)

    const updated = await json(['pods', 'update', pod.id, '--name', 'renamed', '--lock'])
    expect(updated).toMatchObject({ name: 'renamed', locked: true })
    const stop = await cli(['pods', 'stop', pod.id, ...auth()])
    expect(stop.stderr).toMatch(/locked/)
    await json(['pods', 'update', pod.id, '--unlock'])
    expect((await cli(['pods', 'update', pod.id, ...auth()])).stderr).toMatch(/nothing to change/)
    await cli(['pods', 'terminate', pod.id, ...auth()])

    const renamed = await json(['templates', 'update', templateId, '--name', 'notebook-2'])
    expect(renamed).toMatchObject({ id: templateId, name: 'notebook-2' })
    await cli(['templates', 'delete', templateId, ...auth()])
  })

  it("updates endpoints, lists their workers and prints a worker's output", async () => {
    const created = await cli([
      'endpoints',
      'create',
      '--name',
      'echoes',
      '--image',
      'podyard/shell',
      '--cpu',
      'cpu3c:2',
      '--workers-min',
      '1',
      '--workers-max',
      '1',
      '--args',
      'echo hello-from-the-worker; sleep 120',
      '--quiet',
      ...auth(),
    ])
    expect(created.code, created.stderr).toBe(0)
    const id = created.stdout.trim()
    expect(id).toMatch(/^[a-z0-9]{14}$/)

    const workers = await until(
      'a worker',
      () => json(['endpoints', 'workers', id]),
      (list) => list.workers.length > 0,
    )
    const workerId = workers.workers[0].id as string
    const table = await cli(['endpoints', 'workers', id, ...auth()])
    expect(table.stdout).toMatch(/^Version 1: 1 worker\(s\)/)
    expect(table.stdout).toMatch(/ID\s+STATUS\s+VERSION\s+UPTIME S\s+GPU\s+DATA CENTER\s+REASON/)
    expect(table.stdout).toContain(workerId)

    const logs = await until(
      "the worker's output",
      () => cli(['endpoints', 'worker-logs', id, workerId, '--source', 'container', ...auth()]),
      (result) => result.stdout.includes('hello-from-the-worker'),
    )
    expect(logs.code).toBe(0)
    const both = await cli(['endpoints', 'worker-logs', id, workerId, ...auth()])
    expect(both.stdout).toMatch(/ {2}system {5}.*\n/)

    // Scaling alone keeps the version; what workers run with moves it.
    const scaled = await json([
      'endpoints',
      'update',
      id,
      '--workers-min',
      '0',
      '--workers-max',
      '2',
    ])
    expect(scaled).toMatchObject({ version: 1, workers: { min: 0, max: 2 } })
    const moved = await json(['endpoints', 'update', id, '--env', 'MODE=two', '--name', 'echoes-2'])
    expect(moved).toMatchObject({ version: 2, name: 'echoes-2', env: { MODE: 'two' } })
    await cli(['endpoints', 'delete', id, ...auth()])

    // GPU names are accepted where GPU types are named.
    const gpu = await json([
      'endpoints',
      'create',
      '--name',
      'gpu',
      '--image',
      'x',
      '--gpu-pool',
      'ADA_24',
      '--gpu-pool',
      'AMPERE_24',
      '--exclude-gpu',
      'RTX 4090',
    ])
    expect(gpu.gpu.excludedTypes).toEqual(['NVIDIA GeForce RTX 4090'])
    await cli(['endpoints', 'delete', gpu.id, ...auth()])
  })

  it('says who the key belongs to and the balance', async () => {
    const account = await json(['account'])
    expect(account).toMatchObject({ role: 'admin', balance: expect.any(Number) })
    const text = await cli(['account', ...auth()])
    expect(text.stdout).toMatch(
      /^account {6}acct_\w+ \(.*\)\nemail .*\nrole {9}admin\nbalance {6}-?\$/,
    )
    expect(text.stdout).toMatch(/spend limit {2}\$\d+\.\d\d\/h( \(not enforced\))?\n$/)
  })
})
