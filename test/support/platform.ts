import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pino, type Logger } from 'pino'
import { loadConfig } from '../../src/config/load-config.js'
import type { Config } from '../../src/config/schema.js'
import { startPlatform, type Platform } from '../../src/platform.js'
import { AccountService } from '../../src/domain/accounts/account-service.js'
import { systemClock, type Clock, type TimerClock } from '../../src/shared/clock.js'
import type { HostResolver } from '../../src/domain/egress/egress-guard.js'
import { removeDataDir } from './processes.js'
import { TestResolver } from './test-resolver.js'
import { KyselyAccountRepo } from '../../src/store/account-repo.js'
import { KyselyApiKeyRepo } from '../../src/store/api-key-repo.js'
import { ProcessDriver } from '../../src/runtime/process/process-driver.js'

export const TEST_ADMIN_KEY = 'pyd_test-admin-key-0123456789'

export interface TestPlatform extends Platform {
  /** The test's temporary directory: the config's cwd, removed by `close`. */
  dataDir: string
  /** The configuration it runs with (its `dataDir` is `<dataDir>/.podyard`). */
  config: Config
  /** fetch against the platform with `Authorization: Bearer <key>` when a key is given. */
  call(pathAndQuery: string, init?: CallInit): Promise<Response>
}

/** Config overrides of a test; `workers` names only the settings it changes. */
export type TestConfig = Omit<Partial<Config>, 'workers'> & { workers?: Partial<Config['workers']> }

/** The configuration of a test platform in `dataDir`: the defaults, then `overrides`. */
export function testConfig(dataDir: string, overrides: TestConfig = {}): Config {
  const defaults = loadConfig({ cwd: dataDir, env: {}, flags: {} })
  return {
    ...defaults,
    port: 0,
    adminKey: TEST_ADMIN_KEY,
    logLevel: 'silent',
    ...overrides,
    workers: { ...defaults.workers, ...overrides.workers },
  }
}

export interface TestPlatformOptions {
  clock?: Clock
  /** What the control loops' timers wait on (StartOptions.timers); default the system clock. */
  timers?: TimerClock
  logger?: Logger
  resolveHost?: HostResolver
  consoleDir?: string
  /** A fleet file's text: written into the data directory and served as `fleet`. */
  fleetYaml?: string
}

let machineSandbox: Promise<Config['sandbox']> | undefined

/**
 * The `sandbox` of a test platform whose test does not choose one: the default, `auto`, where
 * this machine can sandbox another account's workloads (bubblewrap, and pasta for their network,
 * as CI installs); `none` where it cannot, so that the suite runs on a machine with nothing but
 * Node.js and npm (README), where `auto` refuses every pod but the admin's. Decided once per
 * test process, the way the process driver decides it, and said once on stderr. The suites of
 * containment itself choose their settings (test/containment/).
 */
export function sandboxOfThisMachine(): Promise<Config['sandbox']> {
  machineSandbox ??= (async () => {
    const stateDir = mkdtempSync(path.join(tmpdir(), 'podyard-sandbox-check-'))
    const driver = new ProcessDriver({ stateDir, sandbox: 'auto', network: 'isolated' })
    try {
      const isolation = await driver.isolation()
      if (isolation.level !== 'none') return 'auto'
      process.stderr.write(
        `test platforms run workloads with sandbox: none, as this machine cannot sandbox them (${isolation.detail}); CI installs bubblewrap and passt\n`,
      )
      return 'none'
    } finally {
      await driver.close()
      rmSync(stateDir, { recursive: true, force: true })
    }
  })()
  return machineSandbox
}

/** A real platform: SQLite file in a temp dir, real HTTP on a free port, the demo fleet. */
export async function startTestPlatform(
  overrides: TestConfig = {},
  options: TestPlatformOptions = {},
): Promise<TestPlatform> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'podyard-test-'))
  let fleet: TestConfig = {}
  if (options.fleetYaml !== undefined) {
    writeFileSync(path.join(dataDir, 'fleet.yaml'), options.fleetYaml)
    fleet = { fleet: path.join(dataDir, 'fleet.yaml') }
  }
  const sandbox = overrides.sandbox ?? (await sandboxOfThisMachine())
  const config = testConfig(dataDir, { ...fleet, sandbox, ...overrides })
  const platform = await startPlatform(config, {
    logger: options.logger ?? pino({ level: 'silent' }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
    ...(options.consoleDir ? { consoleDir: options.consoleDir } : {}),
    // Names in webhook URLs resolve from a table, never through DNS off the machine.
    resolveHost: options.resolveHost ?? new TestResolver().resolve,
  })
  return {
    ...platform,
    dataDir,
    config,
    close: async () => {
      await stopPlatform(platform)
      // What a workload may leave behind (a disk image mounted below it) goes too.
      removeDataDir(dataDir)
    },
    call: (pathAndQuery, init = {}) => callPlatform(platform.url, pathAndQuery, init),
  }
}

export type CallInit = RequestInit & { key?: string | null; json?: unknown }

/** fetch against a platform's `baseUrl` with `Authorization: Bearer <key>` (the admin key by default). */
export function callPlatform(
  baseUrl: string,
  pathAndQuery: string,
  init: CallInit = {},
): Promise<Response> {
  const { key = TEST_ADMIN_KEY, json, headers, ...rest } = init
  return fetch(`${baseUrl}${pathAndQuery}`, {
    ...rest,
    headers: {
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
      ...(headers as Record<string, string> | undefined),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  })
}

/** Stops a platform and removes the workloads it started, keeping its store and data dir. */
export async function stopPlatform(platform: Platform): Promise<void> {
  // Workloads outlive a server by design (they are re-adopted); a test leaves none behind.
  await platform.closeWithWorkloads()
}

/** A second account with a read-write key, to check that accounts never see each other. */
export async function otherAccountKey(
  platform: Pick<Platform, 'store'>,
  email: string,
): Promise<string> {
  const accounts = new AccountService(
    new KyselyAccountRepo(platform.store.db),
    new KyselyApiKeyRepo(platform.store.db),
    systemClock,
  )
  const { account } = await accounts.createAccount({ email })
  const { secret } = await accounts.createApiKey({
    accountId: account.id,
    name: 'other',
    permission: 'READ_WRITE',
  })
  return secret
}

/** A call whose answer is read as JSON (null when empty): for tests that look at both parts. */
export async function callJson(
  platform: Pick<TestPlatform, 'call'>,
  pathAndQuery: string,
  init: Parameters<TestPlatform['call']>[1] = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ status: number; body: any }> {
  const response = await platform.call(pathAndQuery, init)
  const text = await response.text()
  return { status: response.status, body: text === '' ? null : JSON.parse(text) }
}
