import { useMemo, useState } from 'react'
import { ok } from '../../api/client'
import { EmptyState } from '../../components/empty-state'
import { SelectField } from '../../components/form-fields'
import { usd } from '../../components/format'
import { LedgerTable } from '../../components/ledger-table'
import { Loading } from '../../components/loading'
import { Page, Section } from '../../components/page'
import { QuotaTable } from '../../components/quota-table'
import { ListView, ResourceView } from '../../components/resource-view'
import { SpendStats } from '../../components/spend-stats'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { SpendChart, type Series } from './spend-chart'
import { bucketLabel, byKind, byResource } from './spend-series'

const RANGES = {
  day: { label: 'last 24 hours, by hour', bucketSize: 'hour', lastN: 24 },
  week: { label: 'last 7 days, by day', bucketSize: 'day', lastN: 7 },
  month: { label: 'last 30 days, by day', bucketSize: 'day', lastN: 30 },
} as const
type Range = keyof typeof RANGES

/** Spend over time by kind and by pod or endpoint, the ledger, and the spend limit. */
export default function BillingPage() {
  const { api, account } = useSession()
  const [range, setRange] = useState<Range>('day')
  const report = useResource(
    async (signal) => {
      const { bucketSize, lastN } = RANGES[range]
      const query = { bucketSize, lastN }
      const [totals, pods, endpoints, podList, endpointList] = await Promise.all([
        ok(api.GET('/v2/billing', { params: { query }, signal })),
        ok(api.GET('/v2/billing/pods', { params: { query }, signal })),
        ok(api.GET('/v2/billing/serverless', { params: { query }, signal })),
        ok(
          api.GET('/v2/pods', {
            params: {
              query: {
                status: ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'],
              },
            },
            signal,
          }),
        ),
        ok(api.GET('/v2/serverless', { signal })),
      ])
      const names = new Map<string, string>([
        ...podList.pods.map((p): [string, string] => [p.id, p.name]),
        ...endpointList.endpoints.map((e): [string, string] => [e.id, e.name]),
      ])
      // The period it answers: until the next period's report arrives, this one is still here.
      return { range, totals, pods, endpoints, names }
    },
    [api, range],
    { refreshMs: 30_000 },
  )
  const ledger = useResource(
    async (signal) => (await ok(api.GET('/v2/account/credits', { signal }))).entries,
    [api],
  )

  // Only the chosen period's own report is drawn: the last period's, still there while the new
  // one is on its way, is neither shown as this period nor labelled with its bucket size.
  const charts = useMemo(() => {
    if (report.data?.range !== range) return undefined
    const { totals, pods, endpoints, names } = report.data
    const starts = totals.records.map((r) => r.startTime)
    return {
      buckets: starts.map((start) => bucketLabel(start, RANGES[range].bucketSize)),
      kinds: byKind(totals.records),
      resources: byResource(starts, pods.records, endpoints.records, names),
      total: totals.metadata.totals.totalAmount,
    }
  }, [report.data, range])

  return (
    <Page title="Billing">
      <div className="stats">
        <SpendStats account={account} />
      </div>
      <p className="hint">The spend limit and credits are set by the admin of this podyard.</p>

      <SelectField label="Period" value={range} onChange={(value) => setRange(value as Range)}>
        {Object.entries(RANGES).map(([key, value]) => (
          <option key={key} value={key}>
            {value.label}
          </option>
        ))}
      </SelectField>

      <ResourceView resource={report} what="the billing report">
        {() =>
          charts ? (
            <>
              <p>
                Spent in this period: <strong>{usd(charts.total)}</strong>
              </p>
              <ChartSection
                title="Spend by kind of resource"
                chartTitle="Spend by kind"
                empty="Nothing was spent in this period."
                buckets={charts.buckets}
                series={charts.kinds}
              />
              <ChartSection
                title="Spend by pod and endpoint"
                chartTitle="Spend by pod and endpoint"
                empty="No pod or endpoint spent anything in this period."
                buckets={charts.buckets}
                series={charts.resources}
              />
            </>
          ) : report.error ? null : (
            <Loading what={`the ${RANGES[range].label}`} />
          )
        }
      </ResourceView>

      {account.quotas ? (
        <Section title="Quotas">
          <p className="muted">
            Set by the admin; a create beyond a quota is refused, a worker beyond it is not
            launched.
          </p>
          <QuotaTable quotas={account.quotas} />
        </Section>
      ) : null}
      <Section title="Ledger">
        <ListView
          resource={ledger}
          what="the ledger"
          empty={<EmptyState title="No credit or charge yet." />}
        >
          {(entries) => <LedgerTable entries={entries} />}
        </ListView>
      </Section>
    </Page>
  )
}

function ChartSection({
  title,
  chartTitle,
  empty,
  buckets,
  series,
}: {
  title: string
  chartTitle: string
  empty: string
  buckets: string[]
  series: Series[]
}) {
  return (
    <Section title={title}>
      {series.length === 0 ? (
        <EmptyState title={empty} />
      ) : (
        <SpendChart title={chartTitle} buckets={buckets} series={series} />
      )}
    </Section>
  )
}
