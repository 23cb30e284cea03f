/**
 * The figures of a bench run, printed at its end as one table: each with its target and, where
 * there is one, its anchor (a figure of another system: measured in the same run, or quoted from
 * an earlier run on this machine or published, as its name says) and the ratio to it.
 */
import { fmt, percentile } from './bench-server.js'

interface Row {
  what: string
  measured: string
  target: string
  anchor: string
  met: string
}

export class Figures {
  private readonly rows: Row[] = []

  /**
   * A latency distribution (sorted ms) against p50/p99 targets (each percentile `<` its bound,
   * or `<=` with `relation`) and an anchor's p50.
   */
  latency(
    what: string,
    sorted: number[],
    target: { p50?: number; p99?: number; relation?: '<' | '<=' },
    anchor?: { name: string; ms: number },
  ): void {
    const p50 = percentile(sorted, 50)
    const p99 = percentile(sorted, 99)
    const relation = target.relation ?? '<'
    const within = (value: number, bound: number | undefined) =>
      bound === undefined || (relation === '<' ? value < bound : value <= bound)
    this.rows.push({
      what,
      measured: `p50 ${fmt(p50)}, p99 ${fmt(p99)} (${sorted.length} calls)`,
      target: [
        target.p50 === undefined ? '' : `p50 ${relation} ${target.p50} ms`,
        target.p99 === undefined ? '' : `p99 ${relation} ${target.p99} ms`,
      ]
        .filter(Boolean)
        .join(', '),
      anchor: anchor
        ? `${anchor.name}: ${fmt(anchor.ms)}; ratio ${(p50 / anchor.ms).toFixed(2)}x`
        : '-',
      met: within(p50, target.p50) && within(p99, target.p99) ? 'yes' : 'no',
    })
  }

  /** A rate against an anchor's rate, the target a ratio to it. */
  rate(
    what: string,
    value: number,
    anchor: { name: string; rate: number; target: number },
    note = '',
  ): void {
    const ratio = value / anchor.rate
    this.rows.push({
      what,
      measured: `${value.toFixed(0)}${note ? ` (${note})` : ''}`,
      target: `>= ${anchor.target}x anchor`,
      anchor: `${anchor.name}: ${anchor.rate.toFixed(0)}; ratio ${ratio.toFixed(2)}x`,
      met: ratio >= anchor.target ? 'yes' : 'no',
    })
  }

  /** A rate printed beside another rate with no target: a figure beside, not a goal. */
  beside(what: string, value: number, other: { name: string; rate: number }, note = ''): void {
    this.rows.push({
      what,
      measured: `${value.toFixed(0)}${note ? ` (${note})` : ''}`,
      target: '- (a figure beside)',
      anchor: `${other.name}: ${other.rate.toFixed(0)}; ratio ${(value / other.rate).toFixed(2)}x`,
      met: '-',
    })
  }

  value(what: string, value: number, relation: '<' | '>=', bound: number): void {
    this.rows.push({
      what,
      measured: value.toFixed(2),
      target: `${relation} ${bound}`,
      anchor: '-',
      met: (relation === '<' ? value < bound : value >= bound) ? 'yes' : 'no',
    })
  }

  skipped(what: string, why: string): void {
    this.rows.push({ what, measured: `skipped: ${why}`, target: '', anchor: '', met: '-' })
  }

  print(load: string): void {
    if (this.rows.length === 0) return
    console.log(`\nfigures (load average at the end ${load}):`)
    console.log('| what | measured | target | anchor | met |')
    console.log('| --- | --- | --- | --- | --- |')
    for (const r of this.rows) {
      console.log(`| ${r.what} | ${r.measured} | ${r.target} | ${r.anchor} | ${r.met} |`)
    }
  }
}
