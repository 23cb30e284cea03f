import { createRequire } from 'node:module'
import type StringWidth from 'string-width'

/** Amounts, counts and prices: what a column is right-aligned for. */
const NUMERIC = /^[-+]?\$?\d[\d,]*(\.\d+)?$/

/**
 * A plain text table for terminals, padded to the widest cell of each column: numbers (and
 * dollar amounts) right-aligned so their digits line up, the rest left-aligned. Widths are
 * terminal columns (string-width): East Asian wide characters and emoji take two, combining
 * marks and ANSI escapes none. `--json` is the machine form.
 */
export function formatTable(
  headers: string[],
  rows: Array<Array<string | number | boolean | null>>,
): string {
  const cells = rows.map((row) => headers.map((_, i) => cellText(row[i])))
  const widths = headers.map((header, i) =>
    Math.max(columns(header), ...cells.map((row) => columns(row[i]!))),
  )
  const numeric = headers.map((_, i) => {
    const values = rows.map((row) => row[i]).filter((cell) => cell !== null && cell !== undefined)
    return (
      values.length > 0 &&
      values.every((cell) => typeof cell === 'number' || NUMERIC.test(String(cell)))
    )
  })
  const line = (values: string[]) =>
    values
      .map((value, i) => {
        const padding = ' '.repeat(widths[i]! - columns(value))
        return numeric[i] ? padding + value : value + padding
      })
      .join('  ')
      .trimEnd()
  return [line(headers), ...cells.map(line)].join('\n')
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/
let stringWidth: typeof StringWidth | undefined

/**
 * Terminal columns of a cell: its length when it is printable ASCII, as nearly every cell is;
 * otherwise string-width's count, loaded on the first such cell (loading it is about a fifth of
 * a client command's start).
 */
function columns(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length
  stringWidth ??= (
    createRequire(import.meta.url)('string-width') as { default: typeof StringWidth }
  ).default
  return stringWidth(text)
}

function cellText(cell: string | number | boolean | null | undefined): string {
  return cell === null || cell === undefined ? '-' : String(cell)
}
