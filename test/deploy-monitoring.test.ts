import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { repoRoot } from './support/cli.js'
import { platformStores } from './support/platform-stores.js'
import type { TestPlatform } from './support/platform.js'

/** Series a SQLite store has no reason to show: its one connection, no LISTEN. */
const POSTGRES_ONLY = new Set(['podyard_db_pool_connections', 'podyard_cluster_listening'])

const read = (file: string) => readFileSync(path.join(repoRoot, 'deploy', file), 'utf8')

interface Rule {
  alert: string
  expr: string
  for?: string
  labels: { severity: string }
  annotations: { summary: string }
}

const rules = (parse(read('prometheus-alerts.yml')) as { groups: Array<{ rules: Rule[] }> })
  .groups[0]!.rules
const dashboard = JSON.parse(read('grafana-dashboard.json')) as {
  panels: Array<{ type: string; targets?: Array<{ expr: string }> }>
}
const expressions = [
  ...rules.map((rule) => rule.expr),
  ...dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr)),
]
/** The metric families the rules and the dashboard read (a histogram's by its own name). */
const named = [
  ...new Set(
    expressions.flatMap((expr) =>
      [...expr.matchAll(/\bpodyard_[a-z0-9_]+/g)].map((match) =>
        match[0].replace(/_(bucket|count|sum)$/, ''),
      ),
    ),
  ),
].sort()

describe('the alert rules and the dashboard', () => {
  it('give every alert a severity and a summary, and every panel a query', () => {
    expect(rules.length).toBeGreaterThan(10)
    for (const rule of rules) {
      expect(rule.alert).toMatch(/^Podyard[A-Za-z]+$/)
      expect(['critical', 'warning', 'info']).toContain(rule.labels.severity)
      expect(rule.annotations.summary).toMatch(/\S/)
    }
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      expect(panel.targets?.length).toBeGreaterThan(0)
    }
    expect(named.length).toBeGreaterThan(15)
  })
})

describe.each(platformStores())('the metrics they read, on $name', (store) => {
  let platform: TestPlatform
  beforeAll(async () => {
    platform = await store.start()
  })
  afterAll(() => platform.close())

  it('are all served at /metrics', async () => {
    const text = await (await platform.call('/metrics')).text()
    const served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!))
    const missing = named.filter(
      (name) => !served.has(name) && !(store.name === 'sqlite' && POSTGRES_ONLY.has(name)),
    )
    expect(missing).toEqual([])
  })
})
