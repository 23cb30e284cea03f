/** Environment variables as rows of name and value, each row with its own remove button. */
export function KeyValueEditor({
  label,
  value,
  onChange,
}: {
  label: string
  value: Array<[string, string]>
  onChange: (next: Array<[string, string]>) => void
}) {
  const set = (index: number, at: 0 | 1, text: string) =>
    onChange(
      value.map((row, i) => (i === index ? (at === 0 ? [text, row[1]] : [row[0], text]) : row)),
    )
  return (
    <fieldset className="kv">
      <legend>{label}</legend>
      {value.map(([name, text], index) => (
        <div className="kv-row" key={index}>
          <input
            aria-label={`${label} ${index + 1} name`}
            placeholder="NAME"
            value={name}
            onChange={(event) => set(index, 0, event.target.value)}
          />
          <input
            aria-label={`${label} ${index + 1} value`}
            placeholder="value"
            value={text}
            onChange={(event) => set(index, 1, event.target.value)}
          />
          <button
            type="button"
            className="button small"
            aria-label={`Remove ${label.toLowerCase()} ${index + 1}`}
            onClick={() => onChange(value.filter((_, i) => i !== index))}
          >
            Remove
          </button>
        </div>
      ))}
      <button type="button" className="button small" onClick={() => onChange([...value, ['', '']])}>
        Add variable
      </button>
    </fieldset>
  )
}

export const envOf = (rows: Array<[string, string]>): Record<string, string> =>
  Object.fromEntries(
    rows.filter(([name]) => name.trim() !== '').map(([name, v]) => [name.trim(), v]),
  )

export const rowsOf = (env: Record<string, string> | undefined): Array<[string, string]> =>
  Object.entries(env ?? {})
