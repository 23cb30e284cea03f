import Fastify from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  installClusterMetrics,
  installHostMetrics,
  installMetrics,
} from '../../src/api/http/metrics.js'
import { WorkerPresence } from '../../src/domain/serverless/worker-presence.js'
import { systemClock } from '../../src/shared/clock.js'
import type { Store } from '../../src/store/open-store.js'
import { platformMetrics } from '../../src/wiring/platform-metrics.js'
import { testStores } from '../support/stores.js'

interface Family {
  name: string
  help: string
  type: string
}

/**
 * The naming rules of Prometheus (and of `promtool check metrics`, which runs only with
 * PODYARD_TEST_PROMTOOL=1: test/platform/metrics-promtool.test.ts) on every family `/metrics` serves,
 * built as the platform builds them, on a real SQLite store.
 */
describe('metric names', () => {
  let store: Store
  let families: Family[]

  beforeAll(async () => {
    store = await testStores()[0]!.open()
    const metrics = platformMetrics({ telemetry: { traceContext: false, endpointLabels: 20 } })
    metrics.watch({
      store,
      presence: new WorkerPresence(systemClock),
      meter: { meteredThroughMs: undefined },
      meterIntervalMs: 10_000,
      clock: systemClock,
    })
    installMetrics(Fastify(), metrics.registry)
    installClusterMetrics(metrics.registry, {
      replicaId: 'replica-1',
      isLeader: () => true,
      listening: () => true,
    })
    installHostMetrics(metrics.registry, { states: () => [] })
    families = (await metrics.registry.getMetricsAsJSON()).map((metric) => ({
      name: metric.name,
      help: metric.help,
      type: String(metric.type),
    }))
  })
  afterAll(() => store?.close())

  it('are served at all', () => {
    expect(families.length).toBeGreaterThan(30)
  })

  it('end in _total for counters, and only for counters', () => {
    for (const { name, type } of families) {
      if (type === 'counter') expect(name, name).toMatch(/_total$/)
      else expect(name, `${name} (${type})`).not.toMatch(/_total$/)
    }
  })

  it('measure in base units, named by their suffix', () => {
    const nonBase =
      /_(ms|milliseconds|us|microseconds|ns|nanoseconds|minutes|hours|days|kb|mb|gb|kilobytes|megabytes|gigabytes|percent)(_|$)/
    for (const { name, type } of families) {
      expect(name, name).toMatch(/^[a-z_][a-z0-9_]*$/)
      expect(name, name).not.toMatch(nonBase)
      // A histogram measures something: a time or a size.
      if (type === 'histogram' || type === 'summary') {
        expect(name, name).toMatch(/_(seconds|bytes)$/)
      }
    }
  })

  it("prefix podyard's own with podyard_, and leave the runtime's standard names as they are", () => {
    for (const { name, help } of families) {
      expect(name, name).toMatch(/^(podyard_|process_|nodejs_)/)
      expect(name, name).not.toMatch(/^podyard_(process|nodejs)_/)
      expect(help.trim(), name).not.toBe('')
    }
    const names = families.map((family) => family.name)
    expect(names).toContain('process_cpu_seconds_total')
    expect(names).toContain('nodejs_eventloop_lag_seconds')
  })
})
