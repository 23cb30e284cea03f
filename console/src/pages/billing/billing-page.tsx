import { useMemo, useState } from 'react'
import { ok } from '../../api/client'
import { EmptyState } from '../../components/empty-state'
import { Field } from '../../components/field'
import { perHour, usd, when } from '../../components/format'
import { Page, Section } from '../../components/page'
import { ResourceView } from '../../components/resource-view'
import { useResource } from '../../hooks/use-resource'
import { useSession } from '../../session/session'
import { SpendChart } from './spend-chart'
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
  const { bucketSize, lastN } = RANGES[range]
  const report = useResource(
    async (signal) => {
      const query = { bucketSize, lastN }
      const [totals, pods, endpoints, podList, endpointList] = await Promise.all([
        ok(api.GET('/v2/billing', { params: { query }, signal })),
        ok(api.GET('/v2/billing/pods', { params: { query }, signal })),
        ok(api.GET('/v2/billing/serverless', { params: { query }, signal })),
        ok(
          api.GET('/v2/pods', {
            params: { query: { status: 'PROVISIONING,STARTING,RUNNING,EXITED,ERROR,TERMINATED' } },
            signal,
          }),
        ),
        ok(api.GET('/v2/serverless', { signal })),
      ])
      const names = new Map<string, string>([
        ...podList.pods.map((p): [string, string] => [p.id, p.name]),
        ...endpointList.endpoints.map((e): [string, string] => [e.id, e.name]),
      ])
      return { totals, pods, endpoints, names }
    },
    [api, bucketSize, lastN],
    { refreshMs: 30_000 },
  )
  const ledger = useResource(
    async (signal) => ok(api.GET('/v2/account/credits', { signal })),
    [api],
  )

  const charts = useMemo(() => {
    if (!report.data) return undefined
    const { totals, pods, endpoints, names } = report.data
    const starts = totals.records.map((r) => r.startTime)
    return {
      buckets: starts.map((start) => bucketLabel(start, bucketSize)),
      kinds: byKind(totals.records),
      resources: byResource(starts, pods.records, endpoints.records, names),
      total: totals.metadata.totals.totalAmount,
    }
  }, [report.data, bucketSize])

  return (
    <Page title="Billing">
      <div className="stats">
        <div className="stat">
          <span className="stat-label">Balance</span>
          <span className="stat-value">{usd(account.balance)}</span>
        </div>
        <div className="stat">
          <span className="stat-label">Spending now</span>
          <span className="stat-value">{perHour(account.currentSpendPerHour)}</span>
        </div>
        <div className="stat">
          <span className="stat-label">Spend limit</span>
          <span className="stat-value">{perHour(account.spendLimit)}</span>
        </div>
      </div>
      <p className="hint">The spend limit and credits are set by the admin of this podyard.</p>

      <Field label="Period">
        {(props) => (
          <select {...props} value={range} onChange={(e) => setRange(e.target.value as Range)}>
            {Object.entries(RANGES).map(([key, value]) => (
              <option key={key} value={key}>
                {value.label}
              </option>
            ))}
          </select>
        )}
      </Field>

      <ResourceView resource={report} what="the billing report">
        {() =>
          charts ? (
            <>
              <p>
                Spent in this period: <strong>{usd(charts.total)}</strong>
              </p>
              <Section title="Spend by kind of resource">
                {charts.kinds.length === 0 ? (
                  <EmptyState title="Nothing was spent in this period." />
                ) : (
                  <SpendChart
                    title="Spend by kind"
                    buckets={charts.buckets}
                    series={charts.kinds}
                  />
                )}
              </Section>
              <Section title="Spend by pod and endpoint">
                {charts.resources.length === 0 ? (
                  <EmptyState title="No pod or endpoint spent anything in this period." />
                ) : (
                  <SpendChart
                    title="Spend by pod and endpoint"
                    buckets={charts.buckets}
                    series={charts.resources}
                  />
                )}
              </Section>
            </>
          ) : null
        }
      </ResourceView>

      <Section title="Ledger">
        <ResourceView resource={ledger} what="the ledger">
          {(data) =>
            data.entries.length === 0 ? (
              <EmptyState title="No credit or charge yet." />
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Amount</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Note</th>
                  </tr>
                </thead>
                <tbody>
                  {data.entries.map((entry) => (
                    <tr key={entry.id}>
                      <td>{when(entry.createdAt)}</td>
                      <td>{usd(entry.amount)}</td>
                      <td>{entry.kind}</td>
                      <td>{entry.note}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </ResourceView>
      </Section>
    </Page>
  )
}
