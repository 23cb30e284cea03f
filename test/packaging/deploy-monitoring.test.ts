import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { freePort } from '../../src/control/free-port.js'
import { repoRoot } from '../support/cli.js'
import { platformStores } from '../support/platform-stores.js'
import type { TestPlatform } from '../support/platform.js'

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

interface ScrapeJob {
  job_name: string
  metrics_path: string
  static_configs: Array<{ targets: string[] }>
  authorization?: unknown
}

const scrapeJobs = (parse(read('prometheus-scrape.yml')) as { scrape_configs: ScrapeJob[] })
  .scrape_configs
const rules = (parse(read('prometheus-alerts.yml')) as { groups: Array<{ rules: Rule[] }> })
  .groups[0]!.rules
const dashboard = JSON.parse(read('grafana-dashboard.json')) as {
  panels: Array<{ type: string; targets?: Array<{ expr: string }> }>
  templating: { list: Array<{ name: string; query?: unknown }> }
}
const expressions = [
  ...rules.map((rule) => rule.expr),
  ...dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr)),
]
/**
 * The metric families the rules and the dashboard read (a histogram's by its own name): podyard's
 * own, and the process and Node.js runtime metrics under their standard names.
 */
const named = [
  ...new Set(
    expressions.flatMap((expr) =>
      [...expr.matchAll(/\b(?:podyard|process|nodejs)_[a-z0-9_]+/g)].map((match) =>
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
    expect(named).toContain('nodejs_eventloop_lag_p99_seconds')
    expect(named.filter((name) => /^podyard_(process|nodejs)_/.test(name))).toEqual([])
  })

  it('read the runtime metrics of the podyard job only, and the job metrics by endpoint', () => {
    // process_* and nodejs_* are every Node.js service's names: without the job they would mix.
    for (const expr of expressions.filter((e) => /\b(process|nodejs)_/.test(e))) {
      expect(expr).toContain('{job="podyard"}')
    }
    expect(dashboard.templating.list.map((variable) => variable.name)).toContain('endpoint')
    const jobPanels = dashboard.panels
      .flatMap((panel) => panel.targets ?? [])
      .map((target) => target.expr)
      .filter((expr) => /podyard_(jobs?|queue)_/.test(expr))
    expect(jobPanels.length).toBeGreaterThan(5)
    for (const expr of jobPanels) expect(expr).toContain('endpoint=~"$endpoint"')
  })

  it("are fed by the scrape example's job, which the rules name, on the metrics listener", () => {
    expect(scrapeJobs).toHaveLength(1)
    const [job] = scrapeJobs
    expect(rules.find((rule) => rule.alert === 'PodyardDown')?.expr).toBe(
      `up{job="${job!.job_name}"} == 0`,
    )
    expect(job!.metrics_path).toBe('/metrics')
    // metrics.listen's port in docs/production.md: no key there, so none configured.
    for (const target of job!.static_configs.flatMap((c) => c.targets)) {
      expect(target).toMatch(/:9464$/)
    }
    expect(job!.authorization).toBeUndefined()
  })
})

describe.each(platformStores())('the metrics they read, on $name', (store) => {
  let platform: TestPlatform
  let metricsUrl: string
  beforeAll(async () => {
    const port = await freePort('127.0.0.1')
    platform = await store.start({ metrics: { listen: `127.0.0.1:${port}` } })
    metricsUrl = `http://127.0.0.1:${port}${scrapeJobs[0]!.metrics_path}`
  })
  afterAll(() => platform.close())

  const missingFrom = (text: string) => {
    const served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!))
    return named.filter(
      (name) => !served.has(name) && !(store.name === 'sqlite' && POSTGRES_ONLY.has(name)),
    )
  }

  it('are all served on the metrics listener without a key, as the scrape example reads them', async () => {
    const response = await fetch(metricsUrl)
    expect(response.status).toBe(200)
    expect(missingFrom(await response.text())).toEqual([])
  })

  it("are all served at the API's /metrics with the admin's key", async () => {
    expect(missingFrom(await (await platform.call('/metrics')).text())).toEqual([])
  })
})
