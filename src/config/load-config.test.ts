import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_WORKLOAD_LOG_MAX_BYTES } from '../runtime/driver.js'
import { ConfigError, loadConfig } from './load-config.js'

/** The folders dirWith made, removed after the file's tests (every run left them in the temp dir). */
const made: string[] = []
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function dirWith(yaml?: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'podyard-config-'))
  made.push(dir)
  if (yaml !== undefined) writeFileSync(path.join(dir, 'podyard.yaml'), yaml)
  return dir
}

describe('loadConfig', () => {
  it('has a default for everything: SQLite under ./.podyard, the demo fleet', () => {
    const cwd = dirWith()
    const config = loadConfig({ cwd, env: {} })
    expect(config.host).toBe('127.0.0.1')
    expect(config.port).toBe(8080)
    expect(config.dataDir).toBe(path.join(cwd, '.podyard'))
    expect(config.storeUrl).toBe(`sqlite:${path.join(cwd, '.podyard', 'podyard.db')}`)
    expect(config.fleet).toBe('demo')
    expect(config.rateLimit).toEqual({ minute: 600, hour: 20000, day: 200000 })
    expect(config.adminKey).toBeUndefined()
  })

  it('layers defaults < file < environment < flags', () => {
    const cwd = dirWith(
      'port: 9000\nhost: 0.0.0.0\nfleet: none\nrateLimit:\n  minute: 10\n  hour: 100\n',
    )
    const config = loadConfig({
      cwd,
      env: {
        PODYARD_PORT: '9100',
        PODYARD_RATELIMIT_HOUR: '200',
        PODYARD_ADMIN_KEY: 'k'.repeat(20),
      },
      flags: { port: '9200' },
    })
    expect(config.port).toBe(9200)
    expect(config.host).toBe('0.0.0.0')
    expect(config.fleet).toBe('none')
    expect(config.rateLimit).toEqual({ minute: 10, hour: 200, day: 200000 })
    expect(config.adminKey).toBe('k'.repeat(20))
  })

  it('reads an explicit --config file instead of ./podyard.yaml', () => {
    const cwd = dirWith('port: 9000\n')
    writeFileSync(path.join(cwd, 'other.yaml'), 'port: 9300\n')
    expect(loadConfig({ cwd, env: {}, configFile: 'other.yaml' }).port).toBe(9300)
  })

  it('names the bad key and where it came from', () => {
    const cwd = dirWith()
    expect(() => loadConfig({ cwd, env: { PODYARD_RATELIMIT_MINUTE: 'lots' } })).toThrow(
      /rateLimit\.minute: .*"lots".*PODYARD_RATELIMIT_MINUTE/,
    )
    expect(() => loadConfig({ cwd, env: { PODYARD_RATELIMIT_DAY: '0' } })).toThrow(
      /rateLimit\.day: Expected integer to be greater or equal to 1, got 0/,
    )
    expect(() => loadConfig({ cwd, env: {}, flags: { port: '70000' } })).toThrow(/port: .*--port/)
  })

  it('reads a list from the file, or from the environment separated by commas', () => {
    const cwd = dirWith('webhooks:\n  allowInternal:\n    - 10.0.0.0/8\n    - hooks.internal\n')
    expect(loadConfig({ cwd, env: {} }).webhooks.allowInternal).toEqual([
      '10.0.0.0/8',
      'hooks.internal',
    ])
    const fromEnv = loadConfig({
      cwd,
      env: { PODYARD_WEBHOOK_ALLOW_INTERNAL: ' 127.0.0.1 , fd00::/8,,*.svc.internal ' },
    })
    expect(fromEnv.webhooks.allowInternal).toEqual(['127.0.0.1', 'fd00::/8', '*.svc.internal'])
    expect(loadConfig({ cwd: dirWith(), env: {} }).webhooks.allowInternal).toEqual([])
  })

  it('rejects unknown keys in the file, naming them', () => {
    const cwd = dirWith('prot: 8080\nrateLimit:\n  minutes: 5\n')
    let message = ''
    try {
      loadConfig({ cwd, env: {} })
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError)
      message = (error as Error).message
    }
    expect(message).toMatch(/prot: unknown key/)
    expect(message).toMatch(/rateLimit\.minutes: unknown key/)
  })

  it('rejects a file that is not a mapping', () => {
    const cwd = dirWith('- just\n- a list\n')
    expect(() => loadConfig({ cwd, env: {} })).toThrow(/must hold a mapping/)
  })

  it('chooses the local host driver and the Docker engine by file, environment and --driver', () => {
    const defaults = loadConfig({ cwd: dirWith(), env: {} })
    expect(defaults.driver).toBe('process')
    expect(defaults.docker).toEqual({ socketPath: '', diskLimit: false })
    const cwd = dirWith('driver: docker\ndocker:\n  socketPath: /run/other.sock\n')
    expect(loadConfig({ cwd, env: {} })).toMatchObject({
      driver: 'docker',
      docker: { socketPath: '/run/other.sock', diskLimit: false },
    })
    const fromEnv = loadConfig({
      cwd: dirWith(),
      env: { PODYARD_DRIVER: 'docker', PODYARD_DOCKER_DISK_LIMIT: 'true' },
    })
    expect(fromEnv).toMatchObject({ driver: 'docker', docker: { diskLimit: true } })
    expect(
      loadConfig({ cwd, env: { PODYARD_DRIVER: 'docker' }, flags: { driver: 'process' } }).driver,
    ).toBe('process')
    expect(() => loadConfig({ cwd: dirWith(), env: {}, flags: { driver: 'kubernetes' } })).toThrow(
      ConfigError,
    )
  })

  it('takes the budget of workload logs in MiB, 50 by default, and refuses one below 1', () => {
    expect(loadConfig({ cwd: dirWith(), env: {} }).workloadLogs).toEqual({ maxMb: 50 })
    expect(DEFAULT_WORKLOAD_LOG_MAX_BYTES).toBe(50 * 1024 * 1024)
    expect(
      loadConfig({ cwd: dirWith('workloadLogs:\n  maxMb: 5\n'), env: {} }).workloadLogs.maxMb,
    ).toBe(5)
    expect(
      loadConfig({ cwd: dirWith(), env: { PODYARD_WORKLOAD_LOG_MAX_MB: '200' } }).workloadLogs
        .maxMb,
    ).toBe(200)
    expect(() => loadConfig({ cwd: dirWith(), env: { PODYARD_WORKLOAD_LOG_MAX_MB: '0' } })).toThrow(
      /workloadLogs\.maxMb.*PODYARD_WORKLOAD_LOG_MAX_MB/,
    )
    expect(() => loadConfig({ cwd: dirWith('workloadLogs:\n  maxMb: 0.5\n'), env: {} })).toThrow(
      /workloadLogs\.maxMb/,
    )
  })

  it("takes the GPU probe image and the kernel log's path, and refuses a malformed image", () => {
    expect(loadConfig({ cwd: dirWith(), env: {} }).gpus).toEqual({
      probeImage: 'ubuntu:24.04',
      kernelLog: '/dev/kmsg',
    })
    const file = dirWith('gpus:\n  probeImage: registry.example.com:5000/base/cuda-smi:12.4\n')
    expect(loadConfig({ cwd: file, env: {} }).gpus.probeImage).toBe(
      'registry.example.com:5000/base/cuda-smi:12.4',
    )
    expect(
      loadConfig({
        cwd: dirWith(),
        env: { PODYARD_GPUS_PROBE_IMAGE: 'alpine:3.20', PODYARD_GPUS_KERNEL_LOG: '/run/xid.fifo' },
      }).gpus,
    ).toEqual({ probeImage: 'alpine:3.20', kernelLog: '/run/xid.fifo' })
    // Empty: the kernel log is not read.
    expect(loadConfig({ cwd: dirWith('gpus:\n  kernelLog: ""\n'), env: {} }).gpus.kernelLog).toBe(
      '',
    )
    expect(() => loadConfig({ cwd: dirWith('gpus:\n  probeImage: ""\n'), env: {} })).toThrow(
      /gpus\.probeImage/,
    )
    for (const bad of ['Ubuntu:24.04', 'ubuntu:24.04; rm -rf /', 'ubuntu:']) {
      expect(() => loadConfig({ cwd: dirWith(), env: { PODYARD_GPUS_PROBE_IMAGE: bad } })).toThrow(
        /gpus\.probeImage.*PODYARD_GPUS_PROBE_IMAGE/,
      )
    }
  })

  it('takes the limits a host may leave unenforced from the file or the environment, and names the valid ones', () => {
    expect(loadConfig({ cwd: dirWith(), env: {} }).containment).toEqual({
      acceptUnenforced: [],
      egress: { allow: [], deny: [] },
      diskWrite: { mibPerSecondPerVcpu: 64, iopsPerVcpu: 500 },
      processDisk: 'auto',
    })
    expect(
      loadConfig({
        cwd: dirWith('containment:\n  diskWrite: { mibPerSecondPerVcpu: 32 }\n'),
        env: { PODYARD_CONTAINMENT_DISK_WRITE_IOPS_PER_VCPU: '0' },
      }).containment.diskWrite,
    ).toEqual({ mibPerSecondPerVcpu: 32, iopsPerVcpu: 0 })
    expect(
      loadConfig({ cwd: dirWith(), env: { PODYARD_CONTAINMENT_PROCESS_DISK: 'none' } }).containment
        .processDisk,
    ).toBe('none')
    const cwd = dirWith('containment:\n  acceptUnenforced: [disk]\n')
    expect(loadConfig({ cwd, env: {} }).containment.acceptUnenforced).toEqual(['disk'])
    expect(
      loadConfig({ cwd, env: { PODYARD_CONTAINMENT_ACCEPT_UNENFORCED: 'disk, pids' } }).containment
        .acceptUnenforced,
    ).toEqual(['disk', 'pids'])
    expect(() =>
      loadConfig({ cwd: dirWith(), env: { PODYARD_CONTAINMENT_ACCEPT_UNENFORCED: 'disks' } }),
    ).toThrow(
      'invalid configuration: containment.acceptUnenforced.0: must be one of "memory", "cpu", "pids", "disk", "diskWrite", "volume", got "disks" (from environment variable PODYARD_CONTAINMENT_ACCEPT_UNENFORCED)',
    )
    expect(() =>
      loadConfig({ cwd: dirWith('containment:\n  acceptUnenforced: disk\n'), env: {} }),
    ).toThrow(/containment\.acceptUnenforced: Expected array/)
  })

  it('takes the egress policy of workloads, refusing what is not a CIDR and an allow no route could reach', () => {
    const cwd = dirWith(
      'containment:\n  egress:\n    allow: [10.1.0.0/16, 192.0.2.7]\n    deny: [10.1.2.0/24]\n',
    )
    expect(loadConfig({ cwd, env: {} }).containment.egress).toEqual({
      allow: ['10.1.0.0/16', '192.0.2.7'],
      deny: ['10.1.2.0/24'],
    })
    expect(
      loadConfig({
        cwd: dirWith(),
        env: { PODYARD_CONTAINMENT_EGRESS_DENY: '10.9.0.0/16, fd00::/8' },
      }).containment.egress?.deny,
    ).toEqual(['10.9.0.0/16', 'fd00::/8'])
    expect(() =>
      loadConfig({ cwd: dirWith(), env: { PODYARD_CONTAINMENT_EGRESS_DENY: '10.0.0.0/33' } }),
    ).toThrow(
      'invalid configuration: containment.egress.deny.0: expected a CIDR (10.0.0.0/8, fd00::/8) or an address, got "10.0.0.0/33" (from environment variable PODYARD_CONTAINMENT_EGRESS_DENY)',
    )
    expect(() =>
      loadConfig({
        cwd: dirWith(
          'containment:\n  egress:\n    allow: [10.1.0.0/16, 169.254.169.254]\n    deny: [10.0.0.0/8]\n',
        ),
        env: {},
      }),
    ).toThrow(
      /containment\.egress\.allow\.0: 10\.1\.0\.0\/16 lies inside the denied 10\.0\.0\.0\/8: it could never be reached; containment\.egress\.allow\.1: 169\.254\.169\.254 lies inside the denied 169\.254\.0\.0\/16/,
    )
  })

  it('takes the job lease and the job API URL for workers, and refuses a URL that is not http(s)', () => {
    const cwd = dirWith('workers:\n  jobLeaseMs: 15000\n')
    const config = loadConfig({
      cwd,
      env: { PODYARD_WORKERS_JOB_API_URL: 'http://lb.internal:8080' },
    })
    expect(config.workers).toMatchObject({
      jobLeaseMs: 15000,
      jobApiUrl: 'http://lb.internal:8080',
    })
    expect(loadConfig({ cwd: dirWith(), env: {} }).workers).toMatchObject({
      jobLeaseMs: 60000,
      jobApiUrl: '',
    })
    expect(() =>
      loadConfig({ cwd, env: { PODYARD_WORKERS_JOB_API_URL: 'lb.internal:8080' } }),
    ).toThrow(
      'workers.jobApiUrl: must be an http(s) URL, got "lb.internal:8080" (from environment variable PODYARD_WORKERS_JOB_API_URL)',
    )
    expect(() => loadConfig({ cwd: dirWith('workers:\n  jobLeaseMs: 1000\n'), env: {} })).toThrow(
      ConfigError,
    )
  })

  it('takes metrics.listen as host:port from the file, PODYARD_METRICS_LISTEN or --metrics-listen', () => {
    expect(loadConfig({ cwd: dirWith(), env: {} }).metrics.listen).toBe('')
    const cwd = dirWith('metrics:\n  listen: 127.0.0.1:9464\n')
    expect(loadConfig({ cwd, env: {} }).metrics.listen).toBe('127.0.0.1:9464')
    expect(
      loadConfig({ cwd, env: { PODYARD_METRICS_LISTEN: '10.0.0.5:9100' } }).metrics.listen,
    ).toBe('10.0.0.5:9100')
    expect(
      loadConfig({
        cwd,
        env: { PODYARD_METRICS_LISTEN: '10.0.0.5:9100' },
        flags: { metricsListen: '[::1]:9200' },
      }).metrics.listen,
    ).toBe('[::1]:9200')
    for (const bad of [
      '9464',
      'metrics.internal',
      '127.0.0.1:',
      ':9464',
      '127.0.0.1:70000',
      '::1:9464',
    ]) {
      expect(() => loadConfig({ cwd, env: { PODYARD_METRICS_LISTEN: bad } })).toThrow(
        `metrics.listen: expected host:port (127.0.0.1:9464, [::1]:9464), got ${JSON.stringify(bad)} (from environment variable PODYARD_METRICS_LISTEN)`,
      )
    }
    expect(() => loadConfig({ cwd: dirWith('metrics:\n  listen: nope\n'), env: {} })).toThrow(
      /metrics\.listen: .*"nope" \(from file .*podyard\.yaml\)/,
    )
  })

  it('keeps an explicit store URL', () => {
    const config = loadConfig({ cwd: dirWith(), env: { PODYARD_STORE_URL: 'postgres://u:p@db/x' } })
    expect(config.storeUrl).toBe('postgres://u:p@db/x')
  })

  it('is frozen all the way down: nested settings cannot be changed once loaded', () => {
    const config = loadConfig({
      cwd: dirWith('containment:\n  acceptUnenforced: [memory]\n'),
      env: {},
    })
    expect(Object.isFrozen(config)).toBe(true)
    expect(Object.isFrozen(config.rateLimit)).toBe(true)
    expect(Object.isFrozen(config.workloadLogs)).toBe(true)
    expect(Object.isFrozen(config.containment.acceptUnenforced)).toBe(true)
    expect(() => {
      ;(config.rateLimit as { minute: number }).minute = 1
    }).toThrow(TypeError)
    expect(() => (config.containment.acceptUnenforced as string[]).push('disk')).toThrow(TypeError)
    expect(config.rateLimit.minute).toBe(600)
  })
})
