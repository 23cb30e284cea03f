import { useEffect, useRef } from 'react'
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  Tooltip,
} from 'chart.js'
import { usd } from '../../components/format'

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend)

export interface Series {
  label: string
  values: number[]
}

// Distinguishable on white and for the common colour blindnesses (Okabe and Ito's palette).
const COLOURS = [
  '#0072B2',
  '#E69F00',
  '#009E73',
  '#CC79A7',
  '#56B4E9',
  '#D55E00',
  '#F0E442',
  '#000000',
  '#999999',
]

/**
 * Spend over time as stacked bars (Chart.js on a canvas). The canvas is an image with a
 * summary for screen readers; the same figures are in the table below it.
 */
export function SpendChart({
  title,
  buckets,
  series,
}: {
  title: string
  buckets: string[]
  series: Series[]
}) {
  const canvas = useRef<HTMLCanvasElement>(null)
  useEffect(() => {
    if (!canvas.current) return
    const chart = new Chart(canvas.current, {
      type: 'bar',
      data: {
        labels: buckets,
        datasets: series.map((s, index) => ({
          label: s.label,
          data: s.values,
          backgroundColor: COLOURS[index % COLOURS.length],
          stack: 'spend',
        })),
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true },
          y: { stacked: true, ticks: { callback: (value) => usd(Number(value)) } },
        },
        plugins: {
          tooltip: {
            callbacks: { label: (item) => `${item.dataset.label}: ${usd(Number(item.raw))}` },
          },
        },
      },
    })
    return () => chart.destroy()
  }, [buckets, series])

  const total = series.reduce((sum, s) => sum + s.values.reduce((a, b) => a + b, 0), 0)
  const summary = `${title}: ${usd(total)} in all, ${series.map((s) => `${s.label} ${usd(s.values.reduce((a, b) => a + b, 0))}`).join(', ')}`
  return (
    <figure className="chart">
      <div className="chart-box">
        <canvas ref={canvas} role="img" aria-label={summary} data-testid={`chart-${title}`} />
      </div>
      <details>
        <summary>{title} as a table</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Period</th>
              {series.map((s) => (
                <th scope="col" key={s.label}>
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {/* A row a bucket, by position: two buckets may share a label (an hour repeated
                when the clocks go back). */}
            {buckets.map((bucket, row) => (
              <tr key={row}>
                <th scope="row">{bucket}</th>
                {series.map((s) => (
                  <td key={s.label}>{usd(s.values[row] ?? 0)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  )
}
