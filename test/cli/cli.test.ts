import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli, startServe } from '../support/cli.js'
import { processesIn } from '../support/dev-process.js'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from '../support/stores.js'
import { until } from '../support/until.js'
import { TEST_ADMIN_KEY, startTestPlatform, type TestPlatform } from '../support/platform.js'
import { removeDataDir } from '../support/processes.js'

describe('podyard CLI against the store', () => {
  let dataDir: string
  const withDir = (...args: string[]) => [...args, '--data-dir', dataDir]

  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-cli-'))
  })
  afterAll(() => removeDataDir(dataDir))

  it('creates no database by accident: store commands need one, or --init', async () => {
    for (const args of [
      ['migrate'],
      ['keys', 'list'],
      ['accounts', 'list'],
      ['credits', 'show', 'x'],
    ]) {
      const refused = await runCli(withDir(...args))
      expect(refused.code, args.join(' ')).toBe(2)
      expect(refused.stderr).toContain(
        `no podyard database at sqlite:${path.join(dataDir, 'podyard.db')}: name an existing one`,
      )
      expect(refused.stderr).toContain('or pass --init to create it there')
    }
    expect(readdirSync(dataDir)).toEqual([])
    // An empty file where the database should be is no podyard database either.
    writeFileSync(path.join(dataDir, 'podyard.db'), '')
    const empty = await runCli(withDir('keys', 'list'))
    expect(empty.code).toBe(2)
    expect(empty.stderr).toMatch(/no podyard database at sqlite:/)
    rmSync(path.join(dataDir, 'podyard.db'))
  })

  it.runIf(process.env[POSTGRES_URL_ENV])(
    'on PostgreSQL: refuses a database podyard never migrated, until migrate --init',
    async () => {
      const { url, drop } = await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
      try {
        const refused = await runCli(['keys', 'list', '--store-url', url])
        expect(refused.code).toBe(2)
        expect(refused.stderr).toMatch(/no podyard database at postgres:\/\/podyard:\*+@/)
        expect((await runCli(['migrate', '--init', '--store-url', url])).code).toBe(0)
        const listed = await runCli(['keys', 'list', '--store-url', url])
        expect(listed.code, listed.stderr).toBe(0)
        expect(listed.stderr).toMatch(/^database postgres:\/\//m)
      } finally {
        await drop()
      }
    },
  )

  it('migrates once with --init, then reports the database up to date', async () => {
    const first = await runCli(withDir('migrate', '--init'))
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/applied 0001-accounts-and-capacity/)
    const second = await runCli(withDir('migrate', '--json'))
    expect(JSON.parse(second.stdout)).toMatchObject({ applied: [] })
  })

  it('creates, lists and revokes keys; the key is printed only at creation', async () => {
    const created = await runCli(
      withDir('keys', 'create', '--name', 'laptop', '--expires', '30d', '--json'),
    )
    expect(created.code).toBe(0)
    expect(created.stderr).toMatch(/Created the admin account; its generated key/)
    const key = JSON.parse(created.stdout) as {
      id: string
      key: string
      permission: string
      expiresAt: string
    }
    expect(key).toMatchObject({ permission: 'READ_WRITE', name: 'laptop' })
    expect(key.key).toMatch(/^pyd_/)
    expect(new Date(key.expiresAt).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000)

    const listed = await runCli(withDir('keys', 'list', '--json'))
    expect(listed.code).toBe(0)
    expect(listed.stderr).toContain(`database sqlite:${path.join(dataDir, 'podyard.db')}`)
    expect(listed.stdout).not.toContain(key.key)
    expect((JSON.parse(listed.stdout) as Array<{ id: string }>).map((k) => k.id)).toContain(key.id)

    const table = await runCli(withDir('keys', 'list'))
    expect(table.stdout).toMatch(/^ID\s+PREFIX\s+NAME/)
    expect(table.stdout).toContain('laptop')

    const revoked = await runCli(withDir('keys', 'revoke', key.id, '--json'))
    expect(JSON.parse(revoked.stdout)).toMatchObject({ id: key.id, revokedAt: expect.any(String) })
  })

  it('creates accounts and restricted keys for them, and explains mistakes', async () => {
    const account = await runCli(
      withDir('accounts', 'create', '--email', 'dev@example.com', '--json'),
    )
    expect(JSON.parse(account.stdout)).toMatchObject({ email: 'dev@example.com', role: 'user' })
    const restricted = await runCli(
      withDir(
        'keys',
        'create',
        '--account',
        'dev@example.com',
        '--permission',
        'restricted',
        '--endpoint',
        'ep1',
        '--json',
      ),
    )
    expect(JSON.parse(restricted.stdout)).toMatchObject({
      permission: 'RESTRICTED',
      endpointIds: ['ep1'],
    })

    const noEndpoint = await runCli(withDir('keys', 'create', '--permission', 'restricted'))
    expect(noEndpoint.code).toBe(2)
    expect(noEndpoint.stderr).toMatch(/must name at least one endpoint/)
    const badPermission = await runCli(withDir('keys', 'create', '--permission', 'root'))
    expect(badPermission.code).not.toBe(0)
    expect(badPermission.stderr).toMatch(/Allowed choices are read-write, read-only, restricted/)
    const unknownAccount = await runCli(withDir('keys', 'list', '--account', 'nobody@example.com'))
    expect(unknownAccount.code).toBe(4)
    expect(unknownAccount.stderr).toMatch(/account nobody@example.com not found/)
  })

  it('names a bad configuration value and exits 2', async () => {
    const result = await runCli(withDir('migrate'), { PODYARD_RATELIMIT_MINUTE: 'many' })
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/rateLimit\.minute: .*PODYARD_RATELIMIT_MINUTE/)
  })

  it('refuses a database migrated by a newer podyard', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'podyard-newer-'))
    expect((await runCli(['migrate', '--init', '--data-dir', dir])).code).toBe(0)
    const db = new SqliteDatabase(path.join(dir, 'podyard.db'))
    db.prepare('insert into podyard_migration (name, timestamp) values (?, ?)').run(
      '0999-future',
      new Date().toISOString(),
    )
    db.close()
    for (const args of [['migrate'], ['serve', '--port', '0']]) {
      const result = await runCli([...args, '--data-dir', dir])
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stderr).toMatch(
        /migrated by a newer version of podyard: it has migration 0999-future/,
      )
    }
    rmSync(dir, { recursive: true, force: true })
  })
})

describe('podyard catalog against a running server', () => {
  let platform: TestPlatform

  beforeAll(async () => {
    platform = await startTestPlatform()
  })
  afterAll(() => platform.close())

  it('prints GPU types as a table and as JSON', async () => {
    const table = await runCli([
      'catalog',
      'gpus',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/^ID\s+NAME\s+MEMORY/)
    expect(table.stdout).toMatch(/NVIDIA GeForce RTX 4090\s+RTX 4090\s+24 GB/)
    const json = await runCli(['catalog', 'gpus', '--json', '--url', platform.url], {
      PODYARD_API_KEY: TEST_ADMIN_KEY,
    })
    expect((JSON.parse(json.stdout) as Array<{ id: string }>).length).toBeGreaterThanOrEqual(8)
  })

  it('prints CPU flavors and data centers', async () => {
    const cpus = await runCli([
      'catalog',
      'cpus',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect(cpus.stdout).toMatch(/cpu3c\s+Compute-Optimized/)
    const dcs = await runCli([
      'catalog',
      'datacenters',
      '--json',
      '--url',
      platform.url,
      '--api-key',
      TEST_ADMIN_KEY,
    ])
    expect((JSON.parse(dcs.stdout) as Array<{ id: string }>).map((d) => d.id)).toContain('US-KS-2')
  })

  it('says what went wrong with a bad key', async () => {
    const result = await runCli([
      'catalog',
      'gpus',
      '--url',
      platform.url,
      '--api-key',
      `pyd_${'q'.repeat(40)}`,
    ])
    expect(result.code).toBe(3)
    expect(result.stderr).toMatch(/401 Unauthorized: the API key is not valid/)
  })
})

describe('podyard serve (the README’s first command)', () => {
  it('starts on an empty data dir, prints the admin key once, serves the catalog, stops on SIGTERM', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-serve-'))
    const server = await startServe(['--port', '0', '--data-dir', dataDir, '--log-level', 'warn'])
    const key = /Admin API key.*\n\s+(pyd_\S+)/.exec(server.banner)?.[1]
    try {
      expect(server.banner).toMatch(/fleet\s+demo: \d+ hosts \(\d+ simulated\)/)
      expect(key).toBeDefined()
      const response = await fetch(`${server.url}/v2/catalog/gpus`, {
        headers: { authorization: `Bearer ${key}` },
      })
      expect(response.status).toBe(200)
      expect(((await response.json()) as { gpus: unknown[] }).gpus.length).toBeGreaterThanOrEqual(8)
    } finally {
      server.child.kill('SIGTERM')
    }
    expect(await server.exited).toBe(0)

    // Pods outlive the server; on shutdown it says which, and how to stop them.
    const again = await startServe(
      ['--port', '0', '--data-dir', dataDir, '--log-level', 'warn', '--fleet', 'none'],
      { PODYARD_SANDBOX: 'none' },
    )
    expect(again.banner).not.toMatch(/Admin API key/)
    let podId: string
    try {
      const created = await fetch(`${again.url}/v2/pods`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'outlives',
          image: 'shell',
          cpu: { id: 'cpu3c', vcpuCount: 2 },
          args: 'sleep 300',
        }),
      })
      expect(created.status, await created.clone().text()).toBe(201)
      podId = ((await created.json()) as { id: string }).id
      await until(
        'the pod running',
        async () => {
          const pod = await fetch(`${again.url}/v2/pods/${podId}`, {
            headers: { authorization: `Bearer ${key}` },
          })
          return ((await pod.json()) as { status: string }).status
        },
        (status) => status === 'RUNNING',
      )
    } finally {
      again.child.kill('SIGTERM')
    }
    expect(await again.exited).toBe(0)
    expect(again.stderr()).toContain(`These keep running`)
    expect(again.stderr()).toContain(`1 pod: ${podId}`)
    expect(again.stderr()).toContain('podyard pods stop <pod-id>')
    for (const pid of processesIn(dataDir)) process.kill(pid, 'SIGKILL')
    removeDataDir(dataDir)
  })

  it('prints a JSON line when ready and one when stopped with --json, the log on stderr', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-serve-'))
    const server = await startServe(['--port', '0', '--data-dir', dataDir, '--json'])
    const ready = JSON.parse(server.stdout().trim()) as { ready: Record<string, unknown> }
    expect(ready.ready).toMatchObject({
      url: server.url,
      store: `sqlite:${path.join(dataDir, 'podyard.db')}`,
      fleet: 'demo',
      leader: true,
      generatedAdminKey: expect.stringMatching(/^pyd_/),
    })
    server.child.kill('SIGTERM')
    expect(await server.exited).toBe(0)
    const lines = server
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines).toHaveLength(2)
    expect(lines[1]).toEqual({
      stopped: { signal: 'SIGTERM', leftRunning: { pods: [], workers: [] } },
    })
    expect(server.stderr()).toMatch(/"msg":"podyard is serving"/)
    removeDataDir(dataDir)
  })

  it('refuses a second server on the same data directory, and takes over after a crash', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-serve-'))
    const args = ['--port', '0', '--data-dir', dataDir, '--log-level', 'warn']
    const first = await startServe(args)
    try {
      const second = await runCli(['serve', ...args])
      expect(second.code).toBe(2)
      expect(second.stderr).toContain(`the data directory ${dataDir} is in use by another`)
      expect(second.stderr).toContain(`pid ${first.child.pid}`)
      expect(second.stderr).toContain(first.url)
      // The first server is untouched.
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200)
    } finally {
      first.child.kill('SIGKILL')
    }
    await first.exited
    // A dead server's lock is the kernel's to release: the next start takes it over.
    const next = await startServe(args)
    next.child.kill('SIGTERM')
    expect(await next.exited).toBe(0)
    removeDataDir(dataDir)
  })
})
