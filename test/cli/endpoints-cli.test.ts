import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseCpuOption } from '../../src/cli/endpoints-commands.js'
import { runCli } from '../support/cli.js'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'

describe('parseCpuOption', () => {
  it('reads <flavor>:<vcpuCount> and names the flag otherwise', () => {
    expect(parseCpuOption('cpu3c:4')).toEqual({ id: 'cpu3c', vcpuCount: 4 })
    expect(() => parseCpuOption('cpu3c')).toThrow('--cpu: "cpu3c" is not <flavor>:<vcpuCount>')
    expect(() => parseCpuOption('cpu3c:x')).toThrow(/^--cpu: /)
  })
})

describe('podyard endpoints', () => {
  let platform: TestPlatform
  const flags = () => ['--url', platform.url, '--api-key', TEST_ADMIN_KEY]
  const endpoints = (...args: string[]) => runCli(['endpoints', ...args, ...flags()])

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('creates GPU and CPU endpoints, lists, gets and deletes', async () => {
    const gpu = await endpoints(
      'create',
      '--name',
      'sdxl',
      '--image',
      'worker:1',
      '--gpu-pool',
      'ADA_24',
      '--gpu-pool',
      'AMPERE_24',
      '--workers-max',
      '5',
      '--request-count',
      '2',
      '--env',
      'A=1',
      '--json',
    )
    expect(gpu.code, gpu.stderr).toBe(0)
    const created = JSON.parse(gpu.stdout) as { id: string; [k: string]: unknown }
    expect(created).toMatchObject({
      name: 'sdxl',
      gpu: { pools: ['ADA_24', 'AMPERE_24'], count: 1 },
      workers: { min: 0, max: 5 },
      scaling: { type: 'REQUEST_COUNT', requestCount: 2 },
      env: { A: '1' },
    })
    // An endpoint is made from a serverless template.
    const template = await platform.call('/v2/templates', {
      method: 'POST',
      json: { name: 'tiny-worker', image: 'runpod/base:0.6.2-ubuntu22.04', serverless: true },
    })
    const templateId = ((await template.json()) as { id: string }).id
    const cpu = await endpoints(
      'create',
      '--name',
      'tiny',
      '--template',
      templateId,
      '--cpu',
      'cpu3c:2',
    )
    expect(cpu.code, cpu.stderr).toBe(0)
    expect(cpu.stdout).toMatch(
      /^Created endpoint [a-z0-9]{14} \(tiny\); run jobs at http.*\/run\n$/,
    )

    const list = await endpoints('list')
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout).toMatch(/ID\s+NAME\s+IMAGE\s+TEMPLATE\s+COMPUTE\s+WORKERS\s+VERSION/)
    expect(list.stdout).toContain('1x ADA_24|AMPERE_24')
    expect(list.stdout).toContain('cpu3c-2')
    expect(list.stdout).toContain(templateId)

    const got = await endpoints('get', created.id)
    expect(got.code, got.stderr).toBe(0)
    expect(got.stdout).toContain('sdxl')

    const releases = await endpoints('releases', created.id)
    expect(releases.code, releases.stderr).toBe(0)
    expect(releases.stdout).toMatch(/^Version 1: 0 of 0 worker\(s\) on it\.\n/)
    expect(releases.stdout).toMatch(/VERSION\s+CREATED\s+WORKERS\s+CHANGED/)
    expect(releases.stdout).toMatch(/\n\s*1\s+\S+\s+0\s+image, args, disk, env, ports/)

    const deleted = await endpoints('delete', created.id)
    expect(deleted.code, deleted.stderr).toBe(0)
    expect(deleted.stdout).toBe(`Deleted endpoint ${created.id}.\n`)
    const gone = await endpoints('get', created.id)
    expect(gone.code).not.toBe(0)
    expect(gone.stderr).toContain(`endpoint ${created.id} not found`)
  })

  it('shows the server refusing a rule', async () => {
    const refused = await endpoints('create', '--name', 'lb', '--image', 'x')
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain('gpu.pools must name at least one GPU pool')
  })
})
