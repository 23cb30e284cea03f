import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freshPostgresDatabase, POSTGRES_URL_ENV } from './stores.js'
import { until } from './until.js'

const run = promisify(execFile)

export type Caller = 'admin' | 'user'

export type ResourceKind =
  | 'pod'
  | 'pod-port'
  | 'template'
  | 'serverless-template'
  | 'volume'
  | 'endpoint'
  | 'worker'
  | 'job'
  | 'failed-job'
  | 'cluster'
  | 'registry'
  | 'admin-key'
  | 'user-email'
  | 'team-email'
  | 'user-account'
  | 'name'
  | 'cpu-host'
  | 'postgres-url'

/** The second, non-admin account whose key runs a user's docs commands. */
export const USER_EMAIL = 'dev@example.com'
const TEAM_EMAIL = 'team@example.com'

/**
 * What the docs' placeholders stand for, made for real through the CLI with the key of the
 * account that runs the command: a pod serving HTTP, a template, a network volume, an endpoint
 * with a worker and a finished job. Each docs block gets its own (startBlock), so that a
 * block deleting its volume leaves the next block's alone.
 */
export class DocsResources {
  private block = new Map<string, Promise<string>>()
  /** Names made unique: a block's docs may create the same names. */
  private made = 0
  private readonly databases: Array<() => Promise<void>> = []
  private accounts = new Map<string, Promise<{ id: string; key: string }>>()

  constructor(
    private readonly url: string,
    private readonly adminKey: string,
    private readonly repoRoot: string,
  ) {}

  /** Drops the PostgreSQL databases it made. */
  async close(): Promise<void> {
    this.block.clear()
    await Promise.all(this.databases.map((drop) => drop()))
  }

  startBlock(): void {
    this.block = new Map()
  }

  /**
   * Removes what a block made, as each account and the admin: its pods, endpoints, clusters,
   * templates, volumes, registries, secrets and the hosts it added, so that the next block
   * finds the demo fleet's capacity free and its names unused.
   */
  async cleanUp(): Promise<void> {
    const keys = [
      this.adminKey,
      ...(await Promise.all([...this.accounts.values()])).map((a) => a.key),
    ]
    const lists = [
      '/v2/pods',
      '/v2/serverless',
      '/v2/clusters',
      '/v2/templates',
      '/v2/network-volumes',
      '/v2/registries',
      '/v2/account/secrets',
    ]
    for (const key of keys) {
      for (const route of lists) {
        for (const item of await this.list(route, key))
          await this.remove(`${route}/${item.id}`, key)
      }
    }
    for (const host of await this.list('/v2/admin/hosts', this.adminKey)) {
      if (host.addedAtRuntime) await this.remove(`/v2/admin/hosts/${host.id}`, this.adminKey)
    }
  }

  private async list(
    route: string,
    key: string,
  ): Promise<Array<{ id: string; addedAtRuntime?: boolean }>> {
    const response = await fetch(`${this.url}${route}`, {
      headers: { authorization: `Bearer ${key}` },
    })
    if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`)
    const body = (await response.json()) as unknown
    const items = Array.isArray(body) ? body : Object.values(body as object).find(Array.isArray)
    return (items ?? []) as Array<{ id: string; addedAtRuntime?: boolean }>
  }

  /** Deletes one; another account's (a public template) or one gone meanwhile is fine. */
  private async remove(route: string, key: string): Promise<void> {
    const response = await fetch(`${this.url}${route}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}` },
    })
    await response.body?.cancel()
  }

  async userKey(): Promise<string> {
    return (await this.account(USER_EMAIL)).key
  }

  resolve(kind: ResourceKind, key: string): Promise<string> {
    const cacheKey = `${kind} ${key}`
    let value = this.block.get(cacheKey)
    if (!value) {
      value = this.make(kind, key)
      this.block.set(cacheKey, value)
    }
    return value
  }

  private async make(kind: ResourceKind, key: string): Promise<string> {
    switch (kind) {
      case 'admin-key':
        return this.adminKey
      case 'user-email':
        return USER_EMAIL
      case 'team-email':
        await this.account(TEAM_EMAIL)
        return TEAM_EMAIL
      case 'user-account':
        return (await this.account(USER_EMAIL)).id
      case 'name':
        return 'renamed-by-the-docs'
      case 'postgres-url': {
        const { url, drop } = await freshPostgresDatabase(process.env[POSTGRES_URL_ENV]!)
        this.databases.push(drop)
        return url
      }
      case 'cpu-host': {
        // A CPU host added at runtime whose engine is never reached (it stays DOWN): enough to
        // update, drain and remove. Its TLS files go to a folder of their own.
        const out = mkdtempSync(path.join(tmpdir(), 'podyard-docs-tls-'))
        try {
          await this.cli(this.adminKey, [
            'hosts',
            'add',
            'cpu-node-3',
            '--data-center',
            'EU-RO-1',
            '--cpu-flavors',
            'cpu3c,cpu3g',
            '--vcpus',
            '32',
            '--memory-gb',
            '128',
            '--tls',
            '10.0.0.13',
            '--tls-out',
            path.join(out, 'tls'),
          ])
        } finally {
          rmSync(out, { recursive: true, force: true })
        }
        return 'cpu-node-3'
      }
      case 'pod':
        return this.cli(key, [
          'pods',
          'create',
          '--name',
          `docs-pod-${++this.made}`,
          '--image',
          'python',
          '--cpu',
          'cpu3c',
          '--port',
          '8000/http',
          '--args',
          'python3 -m http.server $RUNPOD_TCP_PORT_8000',
          '--wait',
          '--quiet',
        ])
      case 'pod-port': {
        const pod = await this.resolve('pod', key)
        const got = JSON.parse(await this.cli(key, ['pods', 'get', pod, '--json'])) as {
          runtime: { ports: Array<{ private: number; public: number }> }
        }
        return String(got.runtime.ports.find((port) => port.private === 8000)!.public)
      }
      case 'template':
        return this.cli(key, [
          'templates',
          'create',
          '--name',
          `docs-template-${++this.made}`,
          '--image',
          'python',
          '--quiet',
        ])
      case 'serverless-template':
        return this.cli(key, [
          'templates',
          'create',
          '--name',
          `docs-serverless-template-${++this.made}`,
          '--image',
          'podyard/echo',
          '--args',
          `${path.join(this.repoRoot, 'node_modules', '.bin', 'tsx')} ${path.join(this.repoRoot, 'examples', 'echo-worker.ts')}`,
          '--serverless',
          '--quiet',
        ])
      case 'volume':
        return this.cli(key, [
          'volumes',
          'create',
          '--name',
          `docs-volume-${++this.made}`,
          '--size',
          '10',
          '--data-center',
          'US-KS-2',
          '--quiet',
        ])
      case 'registry':
        return this.cli(
          key,
          [
            'registries',
            'create',
            '--name',
            `docs-registry-${++this.made}`,
            '--username',
            'ada',
            '--password-stdin',
            '--quiet',
          ],
          'dckr_pat_docs',
        )
      case 'cluster':
        return this.cli(key, [
          'clusters',
          'create',
          '--name',
          `docs-cluster-${++this.made}`,
          '--gpu',
          'NVIDIA H100 80GB HBM3',
          '--gpu-count',
          '1',
          '--pods',
          '2',
          '--image',
          'python',
          '--args',
          'sleep 600',
          '--quiet',
        ])
      case 'endpoint': {
        const tsx = path.join(this.repoRoot, 'node_modules', '.bin', 'tsx')
        const worker = path.join(this.repoRoot, 'examples', 'echo-worker.ts')
        return this.cli(key, [
          'endpoints',
          'create',
          '--name',
          `docs-endpoint-${++this.made}`,
          '--image',
          'podyard/echo',
          '--cpu',
          'cpu3c:2',
          '--workers-min',
          '1',
          '--args',
          `${tsx} ${worker}`,
          '--quiet',
        ])
      }
      case 'job': {
        const endpoint = await this.resolve('endpoint', key)
        const done = JSON.parse(
          await this.cli(key, [
            'jobs',
            'runsync',
            endpoint,
            '--input',
            '{"prompt": "hi"}',
            '--json',
          ]),
        ) as { id: string; status: string }
        if (done.status !== 'COMPLETED') throw new Error(`job: ${JSON.stringify(done)}`)
        return done.id
      }
      case 'failed-job': {
        // The echo worker fails a job whose input says so (examples/echo-worker.ts).
        const endpoint = await this.resolve('endpoint', key)
        const response = await fetch(`${this.url}/v2/${endpoint}/runsync?wait=60000`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ input: { fail: true } }),
        })
        const done = (await response.json()) as { id: string; status: string }
        if (done.status !== 'FAILED') throw new Error(`failed job: ${JSON.stringify(done)}`)
        return done.id
      }
      case 'worker': {
        await this.resolve('job', key)
        const endpoint = await this.resolve('endpoint', key)
        const listed = await until(
          'a worker',
          async () =>
            JSON.parse(await this.cli(key, ['endpoints', 'workers', endpoint, '--json'])) as {
              workers: Array<{ id: string }>
            },
          (value) => value.workers.length > 0,
        )
        return listed.workers[0]!.id
      }
    }
  }

  /** An account of its own with a key and credits, made once through the admin API. */
  private account(email: string): Promise<{ id: string; key: string }> {
    let made = this.accounts.get(email)
    if (!made) {
      made = (async () => {
        const created = await this.admin('/v2/admin/accounts', { email })
        const { account, apiKey } = created as { account: { id: string }; apiKey: { key: string } }
        await this.admin(`/v2/admin/accounts/${account.id}/credits`, { amount: 20 })
        return { id: account.id, key: apiKey.key }
      })()
      this.accounts.set(email, made)
    }
    return made
  }

  private async admin(route: string, body: unknown): Promise<unknown> {
    const response = await fetch(`${this.url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`)
    return response.json()
  }

  private async cli(key: string, args: string[], stdin?: string): Promise<string> {
    const child = run(process.execPath, [path.join(this.repoRoot, 'bin', 'podyard.js'), ...args], {
      env: { ...process.env, PODYARD_URL: this.url, PODYARD_API_KEY: key },
      maxBuffer: 16 * 1024 * 1024,
    })
    child.child.stdin?.end(stdin ?? '')
    const { stdout } = await child
    return stdout.trim()
  }
}
