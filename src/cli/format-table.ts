/** A plain left-aligned text table for terminals; `--json` is the machine form. */
export function formatTable(
  headers: string[],
  rows: Array<Array<string | number | boolean | null>>,
): string {
  const cells = rows.map((row) => row.map((cell) => (cell === null ? '-' : String(cell))))
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...cells.map((row) => row[i]?.length ?? 0)),
  )
  const line = (values: string[]) =>
    values
      .map((value, i) => value.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return [line(headers), ...cells.map(line)].join('\n')
}
