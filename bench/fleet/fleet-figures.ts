/**
 * The figures of a bench/fleet run that have a target, printed at its end as one table (as
 * bench/jobs/figures.ts does for the jobs bench): what was measured, the target, the anchor (a
 * figure of another server measured in the same run, or of this server at another size) and
 * the ratio to it, and whether the target is met.
 */

export const fmt = (n: number, digits = 2) => n.toFixed(digits)
export const ratio = (value: number, anchor: number) => `${fmt(value / anchor, 2)}x`
export const met = (ok: boolean) => (ok ? 'met' : 'NOT MET')

export interface FleetFigure {
  what: string
  measured: string
  target: string
  /** The anchor's name and figure; absent where the target is a bound of its own. */
  anchor?: string
  /** The measured figure over the anchor's. */
  ratio?: number
  met: boolean
}

export class FleetFigures {
  private readonly rows: FleetFigure[] = []

  add(figure: FleetFigure): void {
    this.rows.push(figure)
  }

  print(load: string): void {
    if (this.rows.length === 0) return
    console.log(`\nfigures (load average at the end ${load}):`)
    console.log('| what | measured | target | anchor | ratio | met |')
    console.log('| --- | --- | --- | --- | --- | --- |')
    for (const row of this.rows) {
      const rowRatio = row.ratio === undefined ? '-' : `${fmt(row.ratio)}x`
      console.log(
        `| ${row.what} | ${row.measured} | ${row.target} | ${row.anchor ?? '-'} | ${rowRatio} | ${row.met ? 'yes' : 'no'} |`,
      )
    }
  }
}
